# vramlint-behaviour: the fixes apply (the test checks that they do)
# Running-average meters given the loss with its history: the fixes
# (.item() where the meter's values are only read as numbers, .detach()
# where they are used as tensors) must leave every printed value as it was.
import torch
import torch.nn as nn

torch.manual_seed(0)
batches = [(torch.randn(2, 4), torch.randn(2, 1)) for _ in range(6)]
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


class AverageMeter(object):
    def __init__(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def train():
    losses = AverageMeter()
    tensors = AverageMeter()
    for x, y in batches:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.update(loss, x.size(0))
        tensors.update(loss, x.size(0))
    print("losses {0.val:.6f} {0.avg:.5f} {0.count}".format(losses))
    print("tensors", round(tensors.avg.item(), 5), tensors.count)


train()
print("weights", [round(v, 6) for v in model.weight.flatten().tolist()])
