import torch
from torch.utils.data import DataLoader, Dataset


class Items(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.full((2,), float(i)).cuda()  # want: GPU001


def make_loader(n):
    return DataLoader(Items(n), batch_size=2, num_workers=2)


def main(model):
    train_loader = make_loader(8)
    dl = train_loader
    for x in dl:
        model(x).sum().backward()
    for x in make_loader(4):
        model(x).sum().backward()
