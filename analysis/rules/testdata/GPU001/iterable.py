import torch
from torch.utils.data import IterableDataset, DataLoader


class Stream(IterableDataset):
    def __iter__(self):
        for i in range(10):
            yield torch.tensor([i]).cuda()  # want: GPU001 "`Stream.__iter__` runs in 2 DataLoader workers"


loader = DataLoader(Stream(), num_workers=2)
