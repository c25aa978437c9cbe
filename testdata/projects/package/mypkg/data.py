import torch

from .base import BaseDataset


class Pairs(BaseDataset):
    def __getitem__(self, idx):
        return torch.full((2,), float(idx)).cuda()
