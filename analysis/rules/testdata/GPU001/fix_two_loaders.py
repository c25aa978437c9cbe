import torch
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm


class Pairs(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        x = torch.randn(3)
        x = x.cuda()  # the input, moved too early  # want: GPU001
        y = torch.tensor(i % 2)
        return x, y, i


train_loader = DataLoader(
    Pairs(),
    batch_size=4,
    num_workers=2,
)
val_loader = DataLoader(Pairs(), batch_size=8, num_workers=1, pin_memory=False)
for epoch in range(2):
    for step, (x, y, idx) in enumerate(tqdm(train_loader)):
        print(step, x.shape, y, idx)
    for x, y, idx in val_loader:
        print(x.shape)
