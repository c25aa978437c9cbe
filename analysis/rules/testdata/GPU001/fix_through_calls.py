import torch
from torch.utils.data import DataLoader, Dataset

DEVICE = torch.device("cuda")


class Pairs(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        x = torch.randn(3).to(self.device)  # want: GPU001
        return x, torch.tensor(i)


def fit(model, loader, device):
    for x, y in loader:
        model(x).sum().backward()


def run_epoch(model, data, device):
    fit(model, loader=data, device=device)


def measure(net, loader):
    for step, (x, y) in enumerate(loader):
        net(x)


def predict(model, loader):
    return [model(batch[0]) for batch in loader]


def main():
    loader = DataLoader(Pairs(), batch_size=4, num_workers=2)
    model = torch.nn.Linear(3, 1).to(DEVICE)
    run_epoch(model, loader, DEVICE)
    measure(model, loader)
    print(len(loader), loader.batch_size)
