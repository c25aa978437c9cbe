# Methods that keep what they are given: a recorder's list, a helper of
# the agent. Called with a loss in the step loop, they keep every step's
# graph as `losses.append(loss)` would.
import torch.nn.functional as F


class Recorder:
    def __init__(self):
        self.losses = []
        self.progress = {"epoch": [], "train_loss": []}

    def add_loss(self, loss):
        self.losses.append(loss)

    def record(self, epoch, loss):
        self.progress["epoch"].append(epoch)
        self.progress["train_loss"].append(loss)


class Agent:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.recorder = Recorder()
        self.history = []

    def save_loss(self, loss):
        self.history.append(loss)

    def learn(self, loader, epoch):
        for x, y in loader:
            out = self.model(x)
            loss = F.mse_loss(out, y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.save_loss(loss)  # want: GPU002 "`self.save_loss\(\)` keeps `loss` with its autograd history on `self`; pass `loss.detach\(\)`"
            self.recorder.record(epoch, loss)  # want: GPU002 "`self.recorder.record\(\)` keeps `loss` with its autograd history"
            self.recorder.add_loss(out)  # want: GPU002 "keeps `out` with its autograd history"


def train(model, loader, optimizer):
    rec = Recorder()
    for x, y in loader:
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        rec.add_loss(loss)  # want: GPU002(info) "`rec.add_loss\(\)` keeps `loss` with its autograd history on `rec`; pass `loss.detach\(\)`"
