# Imports under other names, devices in variables, factories with device=.
import torch as T
import torch.utils.data as tud
from torch.utils.data import DataLoader as DL

DEVICE = T.device("cuda:0")
cpu = T.device("cpu")


class Pairs(tud.Dataset):
    def __init__(self):
        self.device = "cuda"

    def __len__(self):
        return 10

    def __getitem__(self, i):
        x = T.zeros(3, device="cuda")  # want: GPU001
        y = T.ones(3).to(DEVICE)  # want: GPU001
        z = T.ones(3).to("cuda:1", non_blocking=True)  # want: GPU001
        w = T.ones(3).to(self.device)  # want: GPU001
        v = T.arange(3, device=DEVICE)  # want: GPU001
        u = T.ones(3).to(device=DEVICE)  # want: GPU001
        return x, y, z, w, v, u


loader = DL(dataset=Pairs(), num_workers=args.workers)


class Ranked(tud.Dataset):
    def __getitem__(self, i):
        return T.ones(3).to(f"cuda:{i % 2}")  # want: GPU001
