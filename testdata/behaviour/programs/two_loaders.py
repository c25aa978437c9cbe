# One Dataset behind a training and a validation DataLoader, nested loops,
# predictions kept for torch.cat, and empty_cache() after every batch.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

DEVICE = "cuda"


class Sines(Dataset):
    def __init__(self, n, offset):
        self.t = torch.linspace(0, 6.28, n) + offset

    def __len__(self):
        return len(self.t)

    def __getitem__(self, i):
        t = self.t[i : i + 1]
        return t.to(DEVICE), torch.sin(t).to(DEVICE)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, t):
        return self.body(t)


def main():
    torch.manual_seed(0)
    train_loader = DataLoader(Sines(128, 0.0), batch_size=32, shuffle=False, num_workers=2)
    val_loader = DataLoader(Sines(32, 0.05), batch_size=16, num_workers=2)
    net = Net().to(DEVICE)
    optimizer = torch.optim.Adam(net.parameters(), lr=0.02)
    criterion = nn.MSELoss()
    for epoch in range(3):
        net.train()
        for t, y in train_loader:
            loss = criterion(net(t), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            torch.cuda.empty_cache()
        net.eval()
        preds = []
        for t, y in val_loader:
            preds.append(net(t))
        print(f"epoch {epoch}: validation output mean {torch.cat(preds).mean():.4f}")


if __name__ == "__main__":
    main()
