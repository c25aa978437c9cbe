# A broken function elsewhere in the file does not hide the finding.
import torch
from torch.utils.data import Dataset


class Broken(Dataset):
    def __getitem__(self, i):
        return torch.ones(1).cuda()  # want: GPU001


def half_typed(x:
    return x +
