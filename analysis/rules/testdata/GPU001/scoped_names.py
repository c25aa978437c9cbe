# Names are scoped as in Python: `ds` in train() is not `ds` in evaluate(),
# so the GPU dataset, loaded only without workers, is not in the workers.
import torch
from torch.utils.data import DataLoader, Dataset


class GpuSet(Dataset):
    def __init__(self, x):
        self.x = x

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i].cuda()  # want: GPU001 "one small synchronous host-to-device copy per sample"


class CpuSet(Dataset):
    def __init__(self, x):
        self.x = x

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i]


def evaluate(x):
    # The GPU dataset is only read in this process: no workers.
    ds = GpuSet(x)
    return DataLoader(ds, batch_size=32)


def train(x, model):
    # Another function's `ds`: the workers load the CPU dataset.
    ds = CpuSet(x)
    loader = DataLoader(ds, batch_size=32, num_workers=4)
    for batch in loader:
        model(batch.cuda(non_blocking=True)).sum().backward()
