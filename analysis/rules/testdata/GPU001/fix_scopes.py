import torch
from torch.utils.data import DataLoader, Dataset


class Leaky(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.randn(3).cuda()  # want: GPU001


class Clean(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.randn(3)


def train_leaky():
    loader = DataLoader(Leaky(), batch_size=4, num_workers=2)
    for x in loader:
        print(x.sum())


def train_clean():
    # Another function's `loader`: not the leaky one.
    loader = DataLoader(Clean(), batch_size=4, num_workers=2)
    for z in loader:
        print(z.sum())


shared = DataLoader(Leaky(), batch_size=4, num_workers=2)


def uses_module_loader():
    for batch in shared:
        print(batch.mean())


def shadows_module_loader(shared):
    # A parameter named like the module-level loader is another value.
    for w in shared:
        print(w)
