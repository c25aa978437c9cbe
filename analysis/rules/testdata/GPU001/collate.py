import functools

import torch
from torch.utils.data import DataLoader, TensorDataset


def collate(batch):
    xs = torch.stack([b[0] for b in batch])
    return xs.cuda()  # want: GPU001 "runs in 8 DataLoader workers"


def collate_to(batch, device):
    return torch.stack(batch).to(device)  # want: GPU001


def collate_cpu(batch):
    return torch.stack(batch)


ds = TensorDataset(torch.randn(10, 2))
a = DataLoader(ds, num_workers=8, collate_fn=collate)
b = DataLoader(ds, num_workers=2, collate_fn=functools.partial(collate_to, device="cuda"))
c = DataLoader(ds, num_workers=2, collate_fn=lambda batch: torch.stack(batch).cuda())  # want: GPU001
d = DataLoader(ds, num_workers=2, collate_fn=collate_cpu)
