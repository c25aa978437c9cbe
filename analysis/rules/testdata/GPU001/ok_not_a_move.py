# Nothing here moves data to a CUDA device inside worker code.
import torch
from torch.utils.data import DataLoader, Dataset

device = torch.device("cpu")


class NotADataset:
    # Has __getitem__ but is no Dataset: not run by DataLoader workers.
    def __getitem__(self, i):
        return torch.ones(1).cuda()


class Casts(Dataset):
    def __init__(self):
        # Preloading onto the GPU once, in __init__, is the legitimate exception.
        self.data = torch.randn(100, 3).cuda()
        self.scale = torch.tensor(2.0)

    def __len__(self):
        return 100

    def __getitem__(self, i):
        x = torch.ones(3).to(torch.float32)
        y = torch.ones(3).to(dtype=torch.float16)
        z = torch.ones(3).to("cpu")
        w = torch.ones(3).to(device)
        v = torch.zeros(3, device="cpu")
        u = x.to(self.scale)
        return x, y, z, w, v, u


loader = DataLoader(Casts(), num_workers=4)
