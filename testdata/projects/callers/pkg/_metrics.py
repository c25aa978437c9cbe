import torch


def compute_elbo(module, dataloader):
    # Every caller, all in another file, runs it under inference_mode.
    elbo = []
    for tensors in dataloader:
        _, _, losses = module(tensors)
        elbo.append(losses.reconstruction_loss + losses.kl_local)
    return torch.cat(elbo).mean()


def compute_error(module, dataloader):
    # One of its callers runs it with autograd on: reported.
    errors = []
    for tensors in dataloader:
        _, _, losses = module(tensors)
        errors.append(losses.reconstruction_loss)
    return torch.cat(errors).mean()


def evaluate_loss(model, val_loader):
    # Called through the module's name, under no_grad.
    model.eval()
    total = 0.0
    for x in val_loader:
        total += model(x).sum().item()
    return total


def evaluate_accuracy(model, val_loader):
    # Called under no_grad in another file, and with autograd on here.
    model.eval()
    correct = 0
    for x, y in val_loader:
        correct += (model(x).argmax(1) == y).sum().item()
    return correct


def report(model, val_loader):
    return evaluate_accuracy(model, val_loader)


def total_kl(module, dataloader):
    # Summed under the callers' no_grad: the total keeps no graph.
    total = 0
    for tensors in dataloader:
        loss = module.loss(tensors)
        total += loss
    return total
