# A function whose caller puts the model in eval mode and calls it with
# autograd on runs its loop as evaluation, whatever its name.
import torch
import torch.nn as nn

model = nn.Linear(8, 2)


def score(net, items):
    outs = []
    for item in items:  # want: GPU004
        outs.append(net(item).argmax(-1).tolist())
    return outs


def evaluate(net, data):
    # Also called under no_grad below: the module-level call after
    # eval() still runs it with autograd on.
    correct = 0
    for d in data:  # want: GPU004
        preds = net(d.text)
        correct += int((preds.argmax(-1) == d.label).sum())
    return correct


def fit(net, loader, optimizer, criterion, test_data):
    for x, y in loader:
        optimizer.zero_grad()
        criterion(net(x), y).backward()
        optimizer.step()
    with torch.no_grad():
        net.eval()
        evaluate(net, test_data)
        net.train()


def report(net, items):
    net.eval()
    return score(net, items)


model.eval()
evaluate(model, [])
