# Tensors that cannot hold a graph: code that runs proves it, or autograd
# builds none for them.
import numpy as np
import torch
import torch.nn as nn
from torch.autograd import grad


def create_rocket_features(dl, model):
    # Features of a model whose parameters do not require grad: numpy()
    # would raise on the joined outputs if they did.
    x_out, y_out = [], []
    for i, (xb, yb) in enumerate(dl):
        x_out.append(model(xb).cpu())
        y_out.append(yb.cpu())
    return torch.cat(x_out).numpy(), torch.cat(y_out).numpy()


def stacked_features(loader, net):
    feats = []
    for x, _ in loader:
        feats.append(net(x))
    return torch.stack(feats).cpu().squeeze().numpy()


def influence(model, src):
    # Gradients computed without create_graph carry no history.
    x = src.clone().requires_grad_()
    out = model(x).sum(dim=-1)
    influences = []
    for j in range(src.size(0)):
        influence = grad([out[j]], [x], retain_graph=True)[0].abs().sum(dim=-1)
        influences.append(influence / influence.sum())
    return torch.stack(influences, dim=0)


def input_gradients(model, loader, criterion):
    saliency = []
    for x, y in loader:
        x.requires_grad_()
        loss = criterion(model(x), y)
        g = torch.autograd.grad(loss, x, create_graph=False)[0]
        saliency.append(g.abs())
    return saliency


def train_compiled(cfg, loss_module, optim, collector, data_buffer):
    # A step function compiled with torch.compile returns what it
    # returns: detached losses (torchrl's sota-implementations).
    def update(batch):
        loss = loss_module(batch)
        loss_sum = loss["loss_critic"] + loss["loss_objective"]
        loss_sum.backward()
        optim.step()
        optim.zero_grad(set_to_none=True)
        return loss.select("loss_critic", "loss_objective").detach()

    if cfg.compile:
        update = torch.compile(update, mode="reduce-overhead")

    for data in collector:
        losses = []
        for batch in data_buffer:
            loss = update(batch).clone()
            losses.append(loss)
        losses = torch.stack(losses).float().mean()


def test_regularizers(train, batch_for, model_for):
    # A sweep over configurations written out: four runs, one loss each.
    regularizer_losses = []
    for regularization_type in [None, "l1", "l2", "l1_l2"]:
        model = model_for(regularization_type)
        model.train(training_set=batch_for(regularization_type))
        loss = model.model.train_loss(batch_for(regularization_type), regularization_type)
        loss.backward()
        regularizer_losses.append(loss)
    assert min(regularizer_losses) == regularizer_losses[0]


def masked_values(masked_model, mask_sets, batch_size):
    # NumPy joins the outputs: it would raise on tensors that require grad
    # (the wrapper returns arrays).
    svals = []
    for masks in mask_sets:
        values = []
        for j in range(0, len(masks), batch_size):
            values.append(masked_model(masks[j : j + batch_size]))
        svals.append(np.concatenate(values).mean())
    print(svals)


def rerank(model, batches):
    # Scores computed under no_grad from outputs that keep their graph for
    # a Grad-CAM backward: new tensors, without history.
    scores, margins = [], []
    for images in batches:
        output = model(images)
        output[:, 1].sum().backward()
        with torch.no_grad():
            score = torch.softmax(output, dim=1)
            margin = output[:, 1] - output[:, 0]
        scores.append(score)
        margins.append(margin.abs())
    return scores, margins
