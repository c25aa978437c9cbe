"""A small training run that makes every GPU-memory mistake vramlint knows.

It is the seed article's situation in miniature: a Dataset that moves each
sample to the GPU inside DataLoader workers, `torch.cuda.empty_cache()` on
every batch, and losses kept with their autograd history.

    python3 examples/train.py          # runs on a GPU, or on the CPU
    vramlint check examples/           # finds the mistakes
"""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Quadrants(Dataset):
    """Points in the plane, labelled by whether x and y have the same sign."""

    def __init__(self, n, seed):
        generator = torch.Generator().manual_seed(seed)
        self.points = torch.randn(n, 2, generator=generator)
        self.labels = (self.points[:, 0] * self.points[:, 1] > 0).long()

    def __len__(self):
        return len(self.points)

    def __getitem__(self, idx):
        point = self.points[idx].to(DEVICE)
        label = self.labels[idx].to(DEVICE)
        return point, label


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, x):
        return self.layers(x)


def main():
    torch.manual_seed(0)
    train_loader = DataLoader(Quadrants(512, seed=0), batch_size=64, shuffle=True, num_workers=2)
    val_loader = DataLoader(Quadrants(128, seed=1), batch_size=64)
    model = Classifier().to(DEVICE)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)

    history = []
    for epoch in range(3):
        model.train()
        epoch_loss = 0.0
        for points, labels in train_loader:
            logits = model(points)
            loss = criterion(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss)
            epoch_loss += loss
            torch.cuda.empty_cache()

        model.eval()
        correct = 0
        for points, labels in val_loader:
            correct += (model(points).argmax(1) == labels).sum().item()
        print(f"epoch {epoch}: mean loss {epoch_loss / len(train_loader):.4f}, "
              f"validation accuracy {correct / len(val_loader.dataset):.3f}")
    print(f"last loss {history[-1]:.4f} after {len(history)} steps")


if __name__ == "__main__":
    main()
