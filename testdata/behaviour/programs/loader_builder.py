# The DataLoader comes from a builder function, is bound to a second name,
# and the model takes its device from a variable; the Dataset moves with
# .cuda(). Both loops must move their batches after the fix.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __init__(self, n):
        self.x = torch.arange(n, dtype=torch.float32).unsqueeze(1) / n

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        return x.cuda(), (x * x).cuda()


def make_loader(n, workers):
    return DataLoader(Squares(n), batch_size=8, num_workers=workers)


def main():
    torch.manual_seed(0)
    device = "cuda"
    model = nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 1)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    train = make_loader(32, 2)
    batches = train
    for epoch in range(3):
        for x, y in batches:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.5f}")
    total = 0.0
    with torch.no_grad():
        for x, y in make_loader(16, 2):
            total += nn.functional.mse_loss(model(x), y).item()
    print(f"held-out loss {total:.5f}")


if __name__ == "__main__":
    main()
