# Sums that do not accumulate history across training steps.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return self.fc(x)


class Transformer(nn.Module):
    def __init__(self, depth):
        super().__init__()
        self.layers = nn.ModuleList([Block() for _ in range(depth)])
        self.drop = nn.Dropout(0.1)

    def forward(self, h):
        # The residual stream: the most common line in PyTorch.
        for layer in self.layers:
            h = h + self.drop(layer(h))
        return h


class ResLSTMLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(8, 8)

    def forward(self, inputs, hidden):
        # `outputs += [out]` extends a list.
        outputs = []
        for i in range(len(inputs)):
            out, hidden = self.cell(inputs[i], hidden)
            outputs += [out]
        return torch.stack(outputs), hidden


def feature_matching_loss(fake_feats, real_feats, loss_func):
    # Loss terms summed in a loss function and returned for backward.
    loss_feats = 0
    for fake, real in zip(fake_feats, real_feats):
        loss_feats += loss_func(fake, real)
    return loss_feats / len(fake_feats)


def tta_predict(network, x, mirror_axes):
    prediction = network(x)
    for axes in mirror_axes:
        prediction += torch.flip(network(torch.flip(x, axes)), axes)
    return prediction / (len(mirror_axes) + 1)


def train(model, loader, optimizer, accelerator):
    criterion = nn.MSELoss()
    metric_total = 0.0
    accumulated = 0
    for step, (x, y) in enumerate(loader):
        pred = model(x)
        # A metric of detached predictions carries no history.
        metric_total += criterion(pred.detach().cpu(), y.cpu())
        # Gradient accumulation through the accelerator.
        accumulated += F.mse_loss(pred, y) / 4
        if step % 4 == 3:
            accelerator.backward(accumulated)
            optimizer.step()
            accumulated = 0
    return metric_total


def count_samples(model, loader, optimizer):
    # A count returned beside the loss is a number.
    total_samples = 0
    total_loss = 0.0
    for batch in loader:
        loss, n_samples = model.forward_loss(batch)
        loss.backward()
        optimizer.step()
        total_samples += n_samples
        total_loss += loss.item()
    return total_loss / total_samples


def accuracy(predictions, targets):
    predictions = predictions.argmax(dim=1).view(targets.shape)
    return (predictions == targets).sum().float() / targets.size(0)


def fast_adapt(model, batch, criterion):
    data, labels = batch
    logits = model(data)
    loss = criterion(logits, labels)
    acc = accuracy(logits, labels)
    return loss, acc


def meta_train(model, loader, optimizer, criterion):
    # Only the first element of what fast_adapt returns has history: the
    # accuracy of an argmax has none.
    n_acc = 0
    n_loss = 0.0
    for batch in loader:
        loss, acc = fast_adapt(model, batch, criterion)
        n_acc += acc
        n_loss += loss.item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return n_acc, n_loss


class SmoothGrad:
    # Gradients with a graph only when the caller asks for one
    # (create_graph is an option): averaging them keeps nothing otherwise.
    def __init__(self, model, n_iter=20, create_graph=False):
        self.model, self.n_iter, self.create_graph = model, n_iter, create_graph

    def grad(self, x):
        x.requires_grad_(True)
        out = self.model(x)
        (gradient,) = torch.autograd.grad(out.sum(), x, create_graph=self.create_graph)
        return out, gradient

    def attribute(self, x):
        result = torch.zeros_like(x)
        for n in range(self.n_iter):
            out, gradient = self.grad(x + torch.randn_like(x))
            result += gradient / self.n_iter
        return result


class Ensemble(nn.Module):
    # The loss of one step: the members' losses summed over the members,
    # returned for the caller's backward.
    def __init__(self, members):
        super().__init__()
        self.members = nn.ModuleList(members)

    def loss(self, inputs, targets):
        total = 0.0
        meta = {}
        for i, model in enumerate(self.members):
            loss, info = model.loss(inputs[i], targets[i])
            meta[f"model_{i}"] = info
            total += loss
        return total / len(self.members), meta


def tune_features(client_data, mask, rounds):
    # nvflare: an executor's evaluate_model fits and scores a classifier
    # and returns the score, a float.
    from .executor import FeatureElectionExecutor

    executors = []
    for X, y in client_data:
        executor = FeatureElectionExecutor(fs_method="lasso")
        executor.set_data(X, y)
        executors.append(executor)
    for t in range(rounds):
        weighted_score = 0.0
        for executor in executors:
            s = executor.evaluate_model(executor.X[:, mask], executor.y)
            weighted_score += s * len(executor.X)
        print(weighted_score)


def harness_scores(model, request_loader):
    # lm-eval's models answer log-likelihood requests with Python numbers;
    # only a negative log-likelihood names a loss.
    total = 0.0
    for requests in request_loader:
        total += model.loglikelihood(requests)[0]
        total += model.log_likelihood(requests)[0]
    print(total)


def elbo_totals(model, data_loader):
    # Pyro's ELBO `loss` returns a float.
    total = 0.0
    for x in data_loader:
        total += model.get_elbo(x)
    print(total)


def helper_scores(model, loader):
    # A helper of another module whose result is never backpropagated:
    # nothing says it is a tensor with history.
    from metrics import get_score

    total = 0.0
    for x, y in loader:
        total += get_score(model(x), y)
    print(total / len(loader))
