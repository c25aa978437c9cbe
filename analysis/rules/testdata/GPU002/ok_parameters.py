# A parameter is what the caller passes, whatever the module binds to the
# same name: `history` in train() is not known to be the module's list
# (it was taken for it), so its entries are the caller's business, as for
# any container passed in.
import torch
import torch.nn as nn

model = nn.Linear(8, 2)
history = []


def train(model, items, opt, history):
    for x in items:
        loss = model(x).sum()
        loss.backward()
        opt.step()
        history.append(loss)
