# Meters given numbers, meters that convert what they get, meters that
# live one iteration, and update methods that are not running sums.
import torch
import torch.nn.functional as F
from torchmetrics import MeanMetric


class AverageMeter:
    def __init__(self):
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n


class SafeMeter:
    def __init__(self):
        self.sum = 0

    def update(self, val, n=1):
        if isinstance(val, torch.Tensor):
            val = val.item()
        self.sum += val * n


class ItemMeter:
    def __init__(self):
        self.sum = 0

    def update(self, val, n=1):
        self.sum += val.item() * n


class Accumulator(AverageMeter):
    def reset(self):
        self.sum = 0
        self.count = 0


class LossAccumulator:
    """Gradient accumulation behind a class: the sum is backpropagated."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.total = 0

    def update(self, loss):
        self.total += loss

    def step(self):
        self.total.backward()
        self.optimizer.step()
        self.total = 0


class Window:
    def __init__(self):
        self.last = None

    def update(self, val):
        self.last = val


def numbers(loader, model, optimizer):
    losses = AverageMeter()
    for x, y in loader:
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.update(loss.item(), x.size(0))
    return losses.sum / losses.count


def converting(loader, model, optimizer):
    safe = SafeMeter()
    items = ItemMeter()
    window = Window()
    metric = MeanMetric()
    accumulator = LossAccumulator(optimizer)
    for x, y in loader:
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        safe.update(loss, x.size(0))
        items.update(loss, x.size(0))
        window.update(loss)
        metric.update(loss)
        accumulator.update(F.mse_loss(model(x), y))


def per_step(loader, model, optimizer):
    for x, y in loader:
        meter = AverageMeter()
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        meter.update(loss)


def evaluate(loader, model):
    losses = AverageMeter()
    with torch.no_grad():
        for x, y in loader:
            losses.update(F.mse_loss(model(x), y), x.size(0))
    return losses.sum / losses.count


def accumulate(loader, model, optimizer, steps):
    # The meter's sum is the loss backpropagated every `steps` batches.
    window = Accumulator()
    for i, (x, y) in enumerate(loader):
        window.update(F.mse_loss(model(x), y))
        if (i + 1) % steps == 0:
            (window.sum / window.count).backward()
            optimizer.step()
            window.reset()


def unpacked_converting(loader, model, optimizer):
    # Paired by position: `safe` is the converting meter, not the summing one.
    raw, safe = AverageMeter(), SafeMeter()
    for x, y in loader:
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        safe.update(loss)
    print(raw.avg)
