# Callers whose eval() does not make the function's loop an evaluation.
import torch
import torch.nn as nn


def probe(net, items):
    outs = []
    for item in items:
        outs.append(net(item).argmax(-1).tolist())
    return outs


def warm_up(net, inp, iters=2):
    # A loop that only counts: a warm-up or a benchmark.
    for _ in range(iters):
        net(inp)


def compute_loss(net, batches, targets):
    # A training loss computed in eval mode (dropout off): its caller
    # backpropagates it.
    total = 0.0
    for x, y in zip(batches, targets):
        total = total + nn.functional.mse_loss(net(x), y)
    return total


def load_or_train(net, path, items, pretrained):
    if pretrained:
        net.load_state_dict(torch.load(path))
        net.eval()
        return
    # eval() ran in a branch that returned: the model trains here.
    probe(net, items)


def frozen(net, items):
    net.eval().requires_grad_(False)
    return probe(net, items)


def back_to_train(net, items):
    net.eval()
    net.train()
    return probe(net, items)


def benchmark(net, inp):
    net.eval()
    warm_up(net, inp)


def train_step(net, batches, targets, optimizer):
    net.eval()
    loss = compute_loss(net, batches, targets)
    loss.backward()
    optimizer.step()


def under_no_grad(net, items):
    net.eval()
    with torch.no_grad():
        return probe(net, items)
