import torch
from torch.utils.data import Dataset


class Quiet(Dataset):
    def __getitem__(self, i):
        a = torch.ones(1).cuda()  # noqa: GPU001
        b = torch.ones(1).cuda()  # noqa
        c = torch.ones(1).cuda()  # noqa: GPU005  # want: GPU001
        return a, b, c
