# A helper's tuple: the elements with history are still accumulated with it.
import torch
import torch.nn as nn

model = nn.Linear(8, 2)
criterion = nn.CrossEntropyLoss()


def step(x, y):
    out = model(x)
    hits = (out.argmax(1) == y).sum()
    return hits, criterion(out, y)


def step_maybe(x, y):
    out = model(x)
    if x.shape[0] == 0:
        return None
    return out.sum(), criterion(out, y)


def step_ragged(x, y):
    out = model(x)
    if x.shape[0] == 1:
        return out.argmax(1), criterion(out, y), None
    return out.argmax(1), criterion(out, y)


def step_gen(x, y):
    out = model(x)
    yield out.sum()
    yield criterion(out, y)
    return None, None


def train(loader, optimizer):
    total_hits = 0
    total_loss = 0.0
    total_maybe = 0.0
    for x, y in loader:
        hits, loss = step(x, y)
        total_hits += hits
        total_loss += loss  # want: GPU003
        # Not a tuple on every return: both names taken to have history.
        s, l = step_maybe(x, y)
        total_maybe += s  # want: GPU003
        # Tuples of two lengths, and a generator: the same.
        p, l = step_ragged(x, y)
        total_maybe += p  # want: GPU003
        h, l = step_gen(x, y)
        total_maybe += h  # want: GPU003
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return total_hits, total_loss.item(), total_maybe
