# Totals that link every step's graph, in the shapes real projects write.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 1)

    def forward(self, x):
        return self.fc(x)

    def training_step(self, batch):
        x, y = batch
        return nn.functional.mse_loss(self(x), y)


def fit(model, loader, optimizer, log_interval):
    total = 0.0
    running = 0.0
    for i, batch in enumerate(loader):
        loss = model.training_step(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss  # want: GPU003 "keeps them all alive; add"
        # A periodic reset bounds the growth but does not remove it.
        running += loss  # want: GPU003 "until `running = 0.0` resets it every `log_interval` iterations"
        if i % log_interval == 0:
            print(running / log_interval)
            running = 0.0
    print(total)
