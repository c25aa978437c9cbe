# vramlint-behaviour: the fixes apply (the test checks that they do)
# Losses logged by key (a dict of lists) and with `+= [loss]`: the fixes
# (.item() where the values are only read as numbers, .detach() where they
# are used as tensors) must leave every printed value as it was.
from collections import defaultdict

import torch
import torch.nn as nn

torch.manual_seed(0)
batches = [(torch.randn(2, 4), torch.randn(2, 1)) for _ in range(6)]
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train():
    history = {"train_loss": [], "step": []}
    metrics = defaultdict(list)
    stacked = {"loss": []}
    losses = []
    for step, (x, y) in enumerate(batches):
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history["train_loss"].append(loss)
        history["step"].append(step)
        metrics["loss"].append(loss)
        stacked["loss"].append(loss)
        losses += [loss]
    print("history", [round(float(v), 6) for v in history["train_loss"]], history["step"])
    print("mean", round(float(sum(metrics["loss"]) / len(metrics["loss"])), 5))
    print("stacked", round(torch.stack(stacked["loss"]).mean().item(), 6))
    print("last", round(float(losses[-1]), 6), len(losses))


train()
print("weights", [round(v, 6) for v in model.weight.flatten().tolist()])
