import lightning
import torch
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.randn(3).cuda()  # want: GPU001


class Rows(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.randn(3).cuda()  # want: GPU001


def train(model, loader):
    for x in loader:
        model(x)


def main(model):
    # A loop here, but the loader also goes to a library trainer: batches
    # are consumed where the fix cannot move them.
    loader = DataLoader(Samples(), num_workers=2)
    train(model, loader)
    lightning.Trainer().fit(model, loader)
    # next(iter(...)) takes a batch outside any loop.
    rows = DataLoader(Rows(), num_workers=2)
    first = next(iter(rows))
    model(first)
