# Histories kept by key (a dict of lists) or extended with `+= [v]`: the
# shapes training scripts log losses in.
from collections import defaultdict

import torch
import torch.nn as nn
import torch.nn.functional as F


def train(model, loader, optimizer, scaler, epochs):
    data_logger = {"epoch": [], "train_loss": []}
    for epoch in range(epochs):
        for batch in loader:
            pred = model(batch)
            loss = F.mse_loss(pred, batch)
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            data_logger["epoch"].append(epoch)
            data_logger["train_loss"].append(loss)  # want: GPU002 "`data_logger\[\"train_loss\"\]` keeps `loss` with its autograd history; store `loss.item\(\)`"
    print(data_logger["epoch"][-1])


def train_by_default(model, loader, optimizer):
    metrics = defaultdict(list)
    criterion = nn.CrossEntropyLoss()
    for x, y in loader:
        logits = model(x)
        loss = criterion(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        metrics["loss"].append(loss)  # want: GPU002 "store `loss.item\(\)`"
        metrics["logits"].append(logits)  # want: GPU002 "`metrics\[\"logits\"\]` keeps `logits` with its autograd history; store `logits.detach\(\)`"
    mean_loss = sum(metrics["loss"]) / len(metrics["loss"])
    print(mean_loss)


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.history = {"train_loss": [], "val_loss": []}

    def fit(self, loader):
        for x, y in loader:
            loss = F.mse_loss(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.history["train_loss"].append(loss)  # want: GPU002 "store `loss.item\(\)`"


def train_extended(model, loader, optimizer):
    losses = []
    for x, y in loader:
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss]  # want: GPU002 "`losses` keeps `loss` with its autograd history; store `loss.item\(\)`"
    print(len(losses))


def train_keyed_as_tensors(model, loader, optimizer):
    history = {"loss": []}
    for x, y in loader:
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        # Used as tensors after the loop: floats would break that.
        history["loss"].append(loss)  # want: GPU002 "store `loss.detach\(\)`"
    print(torch.stack(history["loss"]).mean())


def reset_each_epoch(model, loaders, optimizer):
    # Emptied once an epoch: an epoch's graphs are kept.
    history = {"loss": []}
    for loader in loaders:
        history["loss"] = []
        for x, y in loader:
            loss = F.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history["loss"].append(loss)  # want: GPU002 "store `loss.item\(\)`"
