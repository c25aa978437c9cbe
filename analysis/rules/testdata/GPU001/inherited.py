# A Dataset through a base class of the same file, and torch.utils.data.dataset.
import torch
from torch.utils.data.dataset import Dataset


class Base(Dataset):
    pass


class Child(Base):
    def __getitem__(self, i):
        return torch.randn(2).cuda()  # want: GPU001 "runs in DataLoader workers; .* With .num_workers > 0. it runs"

    def __getitems__(self, idxs):
        return [torch.randn(2).cuda(0) for _ in idxs]  # want: GPU001
