import torch


class Trainer:
    def __init__(self, model, criterion):
        self.model = model
        self.criterion = criterion
        self.losses = []

    def fit(self, loader, epochs):
        for epoch in range(epochs):
            epoch_losses = []
            for x, y in loader:
                out, hidden = self.model(x)
                loss = self.criterion(out, y)
                self.losses.append(loss)  # want: GPU002 "keeps `loss` with its graph and activations alive.*with it every activation"
                epoch_losses.append(out.sum())  # want: GPU002
            print(epoch_losses)
