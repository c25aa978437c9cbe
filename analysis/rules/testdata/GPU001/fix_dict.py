import torch
from torch.utils.data import DataLoader, Dataset

DEV = "cuda:0"


class Samples(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return {
            "image": torch.zeros(3, 4, 4, device=DEV),  # want: GPU001
            "label": torch.tensor(i),
            "mask": torch.ones(4, 4).cuda(),  # want: GPU001
        }


loader = DataLoader(Samples(), batch_size=2, num_workers=2)


def train():
    for batch in loader:
        if batch is None:
            continue
        print(batch["image"].shape, batch["label"], batch["mask"].sum())
