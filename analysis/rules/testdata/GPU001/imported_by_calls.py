# Imports made by calls, as libraries that keep torch optional write them
# (sktime's _safe_import, importlib.import_module): the names stand for
# what the strings name.
import importlib

from mylib.dependencies import _safe_import

torch = _safe_import("torch")
Dataset = _safe_import("torch.utils.data.Dataset")
DataLoader = _safe_import("torch.utils.data.DataLoader")
data = importlib.import_module("torch.utils.data")


class Windows(Dataset):
    def __init__(self, X, device):
        self.X = torch.as_tensor(X)
        self.device = device

    def __len__(self):
        return len(self.X)

    def __getitem__(self, i):
        return self.X[i].to(self.device)  # want: GPU001


class Pairs(data.Dataset):
    def __getitem__(self, i):
        return torch.ones(3).cuda()  # want: GPU001


def fit(X, device, model):
    for x in DataLoader(Windows(X, device), batch_size=32, num_workers=2):
        model(x).sum().backward()
    return data.DataLoader(Pairs(), num_workers=2)
