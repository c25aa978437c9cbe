# A classifier trained with enumerate(tqdm(loader)) and a running total that
# adds up losses with their graph.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


def tqdm(iterable, **kwargs):
    return iterable  # stands in for tqdm's progress bar


class Blobs(Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(2)
        self.centers = torch.tensor([[2.0, 2.0], [-2.0, -2.0], [2.0, -2.0]])
        self.labels = torch.randint(0, 3, (120,), generator=g)
        self.noise = torch.randn(120, 2, generator=g) * 0.5

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        label = self.labels[i]
        point = self.centers[label] + self.noise[i]
        return point.cuda(), label.cuda()


def main():
    torch.manual_seed(0)
    loader = DataLoader(Blobs(), batch_size=20, num_workers=3)
    model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 3)).cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    for epoch in range(4):
        total = 0.0
        for step, (points, labels) in enumerate(tqdm(loader, desc="train")):
            loss = F.cross_entropy(model(points), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss
        print(f"epoch {epoch}: mean loss {total / (step + 1):.4f}")


if __name__ == "__main__":
    main()
