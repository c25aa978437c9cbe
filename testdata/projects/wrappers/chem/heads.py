import torch.nn as nn
from mmengine.model import BaseModule


class BaseHead(BaseModule):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(8, 8, 3) for _ in range(3)])
