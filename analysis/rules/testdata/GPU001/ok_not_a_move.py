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


class Labelled(Dataset):
    # New tensors follow the stored inputs' device, wherever they are.
    def __init__(self, inputs):
        self.inputs = inputs

    def __len__(self):
        return len(self.inputs)

    def __getitem__(self, i):
        x = self.inputs[i]
        return x, torch.tensor([0] * x.size(0), device=x.device)


def collate_to_device(batch):
    # Only a loader without workers runs this: one copy per batch in the
    # main process.
    return torch.stack(batch).to("cuda")


single = DataLoader(Labelled([torch.ones(2)]), batch_size=2, collate_fn=collate_to_device)
