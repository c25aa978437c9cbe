import torch

from proj.base import Stream


class Numbers(Stream):
    def __iter__(self):
        for i in range(16):
            yield torch.tensor([float(i)], device="cuda")
