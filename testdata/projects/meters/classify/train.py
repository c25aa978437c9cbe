import torch.nn.functional as F

from .utils import AverageMeter, History, NumberMeter, accuracy


def train(loader, model, optimizer, epoch):
    losses = AverageMeter("Loss", ":.4e")
    top1 = AverageMeter("Acc@1", ":6.2f")
    numbers = NumberMeter("Loss", ":.4e")
    history = History()
    for images, target in loader:
        output = model(images)
        loss = F.cross_entropy(output, target)
        losses.update(loss, images.size(0))
        top1.update(accuracy(output, target), images.size(0))
        numbers.update(loss, images.size(0))
        history.add(loss)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"Epoch {epoch}: loss {losses.avg:.4f} acc {top1.avg:.2f}")
