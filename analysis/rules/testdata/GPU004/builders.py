# Models whose names say nothing, built by a function or method of the
# file: the builder's returns tell that they are models.
import torch
import torch.nn as nn


class RecurrentAutoencoder(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.rnn = nn.LSTM(dim, 16, batch_first=True)
        self.out = nn.Linear(16, dim)

    def forward(self, x):
        h, _ = self.rnn(x)
        return self.out(h)


class Detector:
    def __init__(self, device="cuda"):
        self.device = device
        self.recon = None

    def _make_recon(self, dim):
        return RecurrentAutoencoder(dim)

    def fit(self, dim):
        self.recon = self._make_recon(dim).to(self.device)

    def score(self, loader):
        self.recon.eval()
        errors = []
        for x in loader:  # want: GPU004
            x = x.to(self.device)
            errors.append((self.recon(x) - x).pow(2).mean().item())
        return errors


def make_scorer(width):
    layers = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 1))
    if width > 64:
        layers = nn.DataParallel(layers)
    return layers


def rank_items(loader, width):
    scorer = make_scorer(width).cuda()
    scorer.eval()
    ranked = []
    for batch in loader:  # want: GPU004
        ranked.extend(scorer(batch.cuda()).squeeze(-1).tolist())
    return ranked
