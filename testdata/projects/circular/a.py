import torch
from torch.utils.data import DataLoader

from b import B


class A(B):
    def __getitem__(self, idx):
        return torch.zeros(1).cuda()


loader = DataLoader(A(), num_workers=2)
for batch in loader:
    print(batch)
