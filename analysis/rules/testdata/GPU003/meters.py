# Running-average meters given a loss with its history: the ImageNet
# example's AverageMeter, copied into many projects, sums what it gets.
import torch
import torch.nn.functional as F
from timm.utils import AverageMeter as TimmMeter


class AverageMeter(object):
    """Computes and stores the average and current value"""

    def __init__(self, name="", fmt=":f"):
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


class Totals:
    def __init__(self):
        self.total = 0

    def update(self, value):
        self.total += value


def train(loader, model, criterion, optimizer):
    losses = AverageMeter("Loss", ":.4e")
    for images, target in loader:
        output = model(images)
        loss = criterion(output, target)
        losses.update(loss, images.size(0))  # want: GPU003(info) "`losses` sums `loss` with its history, keeping every iteration's graph alive; pass `loss.item\(\)`"
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print("Loss {loss.avg:.4f}".format(loss=losses))


def train_timm(loader, model, optimizer):
    loss_m = TimmMeter()
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        # The meter's average is used as a tensor: floats would break it.
        loss_m.update(loss, x.size(0))  # want: GPU003 "pass `loss.detach\(\)`"
    return loss_m.avg.item()


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.totals = Totals()

    def fit(self, loader):
        for x, y in loader:
            loss = F.mse_loss(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.totals.update(loss)  # want: GPU003 "`self.totals` sums `loss` with its history; pass its `.item\(\)`"


def warm_up(model, x):
    # A backward pass through another `.sum` says nothing of the meter's.
    model(x).sum().backward()


def train_unpacked(loader, model, optimizer):
    # Meters made in one tuple assignment, as ImageNet-style scripts often
    # do: each target is bound to its own value.
    batch_time, losses, top1 = AverageMeter(), AverageMeter("Loss"), AverageMeter()
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.update(loss, x.size(0))  # want: GPU003(info) "`losses` sums `loss`"
    print(losses.avg)


class UnpackingTrainer:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer
        self.train_loss, self.val_loss = AverageMeter(), AverageMeter()

    def fit(self, loader):
        for x, y in loader:
            loss = F.mse_loss(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.train_loss.update(loss, x.size(0))  # want: GPU003(info) "`self.train_loss` sums `loss`"
