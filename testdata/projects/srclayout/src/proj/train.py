import torch
from torch.utils.data import DataLoader

from . import stream
from .base import Backbone


class Net(Backbone):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(1, 1)

    def forward(self, x):
        return self.fc(x)


def run(workers):
    loader = DataLoader(stream.Numbers(), batch_size=4, num_workers=workers)
    net = Net().cuda()
    net.eval()
    for x in loader:
        print(net(x).sum().item())
