"""Meters, as the ImageNet example defines them."""
import torch


class AverageMeter(object):
    """Computes and stores the average and current value"""

    def __init__(self, name, fmt=":f"):
        self.name = name
        self.fmt = fmt
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


class NumberMeter(AverageMeter):
    """Takes tensors too: keeps their values only."""

    def update(self, val, n=1):
        if torch.is_tensor(val):
            val = val.item()
        super().update(val, n)


def accuracy(output, target):
    with torch.no_grad():
        return (output.argmax(1) == target).float().mean() * 100


class History:
    """Every step's loss, for the plots."""

    def __init__(self):
        self.losses = []

    def add(self, loss):
        self.losses.append(loss)
