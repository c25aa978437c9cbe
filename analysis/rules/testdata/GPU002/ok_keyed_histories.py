# Keyed histories that keep no history, or that live one iteration, or
# whose holder is not a builtin dict of lists.
import numpy as np
import torch
import torch.nn.functional as F


def floats(model, loader, optimizer):
    history = {"loss": [], "acc": []}
    for x, y in loader:
        out = model(x)
        loss = F.cross_entropy(out, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history["loss"].append(loss.item())
        history["acc"].append((out.argmax(1) == y).float().mean().item())
    return history


def reset_each_step(model, loader, optimizer):
    last = {"loss": []}
    for x, y in loader:
        last["loss"] = []
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        last["loss"].append(loss)


def meters(model, loader, optimizer, tracker):
    # An object of another class may convert what it is given.
    stats = {"loss": tracker}
    for x, y in loader:
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        stats["loss"].append(loss)


def unknown_dict(model, loader, optimizer):
    logs = {}
    for x, y in loader:
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        logs["loss"].append(loss)


def summed_for_backward(model, loader, optimizer):
    terms = {"main": []}
    for x, y in loader:
        terms["main"].append(F.mse_loss(model(x), y))
    total = torch.stack(terms["main"]).sum()
    total.backward()
    optimizer.step()


def joined_into_numpy(model, loader, optimizer):
    # .numpy() raises on tensors that require grad: code that runs keeps
    # none with history there.
    outputs = {"pred": []}
    for x, y in loader:
        out = model(x)
        loss = F.mse_loss(out, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        outputs["pred"].append(out)
    return np.concatenate(outputs["pred"])


def window(model, loader, optimizer):
    recent = {"loss": []}
    for x, y in loader:
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        recent["loss"].append(loss)
        if len(recent["loss"]) > 10:
            recent["loss"].pop(0)


def extended_in_forward(criterion, outputs, targets):
    # Loss terms of one step, summed and returned.
    losses = []
    for out, y in zip(outputs, targets):
        losses += [criterion(out, y)]
    return sum(losses)


def no_grad_eval(model, loader):
    history = {"loss": []}
    with torch.no_grad():
        for x, y in loader:
            history["loss"].append(F.mse_loss(model(x), y))
    return history


def per_task(model, loaders, optimizer, tasks):
    # A list of lists is not taken for a history: beam searches keep their
    # hypotheses so (see generate).
    per_task = [[] for _ in tasks]
    for x, y, task in loaders:
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        per_task[task].append(loss)


def generate(model, tokens, max_length):
    # Decoding steps keep scores a caller may train on (self-critical
    # sequence training calls this with autograd on).
    beams = {"finished": []}
    for step in range(max_length):
        logits = model(tokens)[:, -1, :]
        score, token = torch.log_softmax(logits, dim=-1).max(dim=-1)
        beams["finished"].append(score)
        tokens = torch.cat([tokens, token[:, None]], dim=-1)
    best = []
    for hypothesis in sorted(beams["finished"], key=lambda s: s.sum()):
        best.append(hypothesis)
    return tokens, best
