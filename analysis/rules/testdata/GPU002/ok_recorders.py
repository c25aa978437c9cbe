# Methods given numbers, methods that convert or do not keep what they are
# given, containers that are windows, reset each call, joined into NumPy
# or backpropagated, and recorders made on each iteration.
import numpy as np
import torch
import torch.nn.functional as F


class Recorder:
    def __init__(self):
        self.losses = []
        self.window = []
        self.last = []
        self.pending = []
        self.arrays = []

    def add_loss(self, loss):
        self.losses.append(loss)

    def add_number(self, loss):
        loss = float(loss)
        self.losses.append(loss)

    def add_recent(self, loss):
        self.window.append(loss)
        if len(self.window) > 10:
            self.window.pop(0)

    def add_last(self, loss):
        self.last = []
        self.last.append(loss)

    def add_latest(self, key, loss):
        # Set afresh before the store: one call's value only.
        self.latest = {}
        self.latest[key] = loss

    def add_pending(self, loss):
        self.pending.append(loss)

    def flush(self):
        torch.stack(self.pending).sum().backward()
        self.pending = []

    def add_array(self, out):
        self.arrays.append(out)

    def mean_array(self):
        return np.mean(self.arrays)

    def show(self, loss):
        print(loss)


def train(model, loader, optimizer):
    rec = Recorder()
    for x, y in loader:
        out = model(x)
        loss = F.mse_loss(out, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        rec.add_loss(loss.item())
        rec.add_number(loss)
        rec.add_recent(loss)
        rec.add_last(loss)
        rec.add_latest("loss", loss)
        rec.add_array(out)
        rec.show(loss)
        each = Recorder()
        each.add_loss(loss)


def accumulate(model, loader, optimizer, steps):
    rec = Recorder()
    for i, (x, y) in enumerate(loader):
        rec.add_pending(F.mse_loss(model(x), y))
        if (i + 1) % steps == 0:
            rec.flush()
            optimizer.step()


def evaluate(model, loader):
    rec = Recorder()
    with torch.no_grad():
        for x, y in loader:
            rec.add_loss(F.mse_loss(model(x), y))
    return rec.losses


class Rollout:
    def __init__(self):
        self.log_probs = []
        self.rewards = []

    def add(self, log_prob, reward):
        self.log_probs.append(log_prob)
        self.rewards.append(reward)


def reinforce(policy, env, optimizer, steps):
    # The log-probabilities are kept for the update after the episode:
    # that backward pass needs their graphs.
    rollout = Rollout()
    state = env.reset()
    for t in range(steps):
        probs = policy(state)
        action = torch.multinomial(probs, 1)
        state, reward = env.step(action)
        rollout.add(torch.log(probs[action]), reward)
    update(rollout, optimizer)


def update(rollout, optimizer):
    loss = -(torch.stack(rollout.log_probs) * torch.tensor(rollout.rewards)).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
