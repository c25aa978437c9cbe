import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F


class Agent:
    """A training step called once per step by its owner: the total it
    keeps on the object adds up every call's loss."""

    def __init__(self, model):
        self.model = model
        self.loss_function = nn.MSELoss()
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        self.running_loss = 0

    def train(self, data, target):
        self.model.zero_grad()
        out = self.model(data)
        loss = self.loss_function(out, target)
        loss.backward()
        self.running_loss += loss  # want: GPU003(info) "`train` runs `loss.backward\(\)` each time it is called, and `self.running_loss` outlives the call"
        self.optimizer.step()


class Recipe:
    def __init__(self, model, loss_fn, optimizer, steps):
        self._model = model
        self._loss_fn = loss_fn
        self._optimizer = optimizer
        self._steps = steps
        self._step = 0
        self._running_loss = 0

    def train_step(self, tokens, labels):
        loss = self._loss_fn(self._model(tokens), labels) / self._steps
        # Reset every few calls: reported with the bound, and told
        # .detach(), since the total is used as a tensor below.
        self._running_loss = self._running_loss + loss  # want: GPU003 "resets it every `self._steps` calls\. Add `loss\.detach\(\)`"
        loss.backward()
        if (self._step + 1) % self._steps == 0:
            self._optimizer.step()
            self._optimizer.zero_grad()
            print(f"running loss {self._running_loss.item()}")
            self._running_loss = 0
        self._step += 1


class LitRegressor(L.LightningModule):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.epoch_loss = 0.0
        self.steps = 0

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self.model(x), y)
        # Lightning backpropagates the loss returned; the total keeps
        # every step's graph nodes until the epoch's end sets it to 0.
        self.epoch_loss += loss  # want: GPU003 "Lightning runs `training_step` on every batch"
        self.steps += 1
        return loss

    def on_train_epoch_end(self):
        self.log("epoch_loss", self.epoch_loss / self.steps)
        self.epoch_loss, self.steps = 0.0, 0
