import torch
from torch.utils.data import DataLoader, Dataset


class Small(Dataset):
    def __getitem__(self, i):
        return torch.ones(1).cuda()  # want: GPU001 "one small synchronous host-to-device copy per sample"

    def __len__(self):
        return 4


loader = DataLoader(Small(), batch_size=2)
