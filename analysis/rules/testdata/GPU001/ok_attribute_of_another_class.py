# self.device is the instance's own: the Dataset moves to its own device, "cpu",
# not to the trainer's, and a move to the CPU in the workers costs nothing.
import torch
from torch.utils.data import DataLoader, Dataset


class Frames(Dataset):
    def __init__(self, x):
        self.x = x
        self.device = "cpu"

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i].to(self.device)


class Trainer:
    def __init__(self, model):
        self.model = model
        self.device = torch.device("cuda")

    def fit(self, data):
        loader = DataLoader(Frames(data), batch_size=8, num_workers=4)
        for batch in loader:
            self.model(batch.to(self.device)).sum().backward()
