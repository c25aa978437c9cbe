# Dict samples built on the device, a None guard in the loop, a loss history
# kept with its graph, and an evaluation loop with autograd on.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda")


class Regression(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(1)
        self.x = torch.randn(n, 4, generator=g)
        self.w = torch.tensor([1.0, -2.0, 0.5, 3.0])

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        return {
            "features": x.to(device),
            "target": torch.tensor([float(x @ self.w)], device=device),
            "index": i,
        }


def main():
    torch.manual_seed(0)
    loader = DataLoader(Regression(96), batch_size=16, num_workers=2)
    model = nn.Linear(4, 1)
    model = model.to(device)
    criterion = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    history = []
    for epoch in range(3):
        for batch in loader:
            if batch is None:
                continue
            loss = criterion(model(batch["features"]), batch["target"])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss)
            torch.cuda.empty_cache()
        print(f"epoch {epoch}: last loss {history[-1]:.4f}")
    model.eval()
    worst = 0.0
    for batch in loader:
        err = (model(batch["features"]) - batch["target"]).abs().max().item()
        worst = max(worst, err)
    print(f"steps {len(history)}, mean loss {sum(history) / len(history):.4f}, worst error {worst:.3f}")


if __name__ == "__main__":
    main()
