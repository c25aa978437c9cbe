import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)

    def objective(self, x, y):
        return F.mse_loss(self(x), y)

    @torch.no_grad()
    def error(self, x, y):
        return F.mse_loss(self(x), y)
