import torch.nn as nn
from torch.utils.data import IterableDataset


class Backbone(nn.Module):
    pass


class Stream(IterableDataset):
    pass
