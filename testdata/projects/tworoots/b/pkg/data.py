import torch

from pkg.base import Base


class Items(Base):
    def __getitem__(self, idx):
        return torch.ones(3).cuda()
