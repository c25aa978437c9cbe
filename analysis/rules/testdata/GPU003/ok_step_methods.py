import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F


class Learner:
    def __init__(self, model):
        self.model = model
        self.criterion = nn.MSELoss()
        self.accumulated = 0
        self.total = 0
        self.evaluated = 0
        self.seen = 0

    def step(self, x, y):
        loss = self.criterion(self.model(x), y)
        loss.backward()
        # Added as a number, or as a tensor without history.
        self.total += loss.item()
        self.seen += loss.detach()

    def accumulate(self, x, y):
        loss = self.criterion(self.model(x), y)
        loss.backward()
        # Summed over calls and backpropagated in another method: keeping
        # the graph is the point.
        self.accumulated += loss

    def flush(self):
        self.accumulated.backward()
        self.accumulated = 0

    def forward_only(self, x, y):
        # No backward here: nothing says the method runs a training step.
        self.evaluated += self.criterion(self.model(x), y)

    def fresh_each_call(self, x, y):
        loss = self.criterion(self.model(x), y)
        loss.backward()
        self.last = 0
        self.last += loss
        print(self.last.item())

    def returned(self, x, y):
        loss = self.criterion(self.model(x), y)
        loss.backward()
        self.returned_total += loss
        return self.returned_total

    @torch.no_grad()
    def validate(self, x, y):
        loss = self.criterion(self.model(x), y)
        self.evaluated += loss


def helper(state, x, y, model, criterion):
    # Not a method: state is whatever the caller passes.
    loss = criterion(model(x), y)
    loss.backward()
    state.total += loss


class LitManual(L.LightningModule):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.automatic_optimization = False
        self.total = 0.0

    def training_step(self, batch, batch_idx):
        # Manual optimization: Lightning ignores what the step returns.
        loss = F.mse_loss(self.model(batch), batch)
        self.total += loss
        return loss


class LitDetached(L.LightningModule):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.total = 0.0

    def training_step(self, batch, batch_idx):
        loss = F.mse_loss(self.model(batch), batch)
        self.total += loss.detach()
        return loss

    def validation_step(self, batch, batch_idx):
        # Lightning validates under no_grad, and returns nothing to backward.
        loss = F.mse_loss(self.model(batch), batch)
        self.total += loss
        return loss
