# The DataLoader is built in main() and passed to train(model, loader, ...)
# and evaluate(model, loader, device): the loops that consume its batches
# are in other functions, one unpacking in the loop header and one in the
# body. The fix must move the batch in both, or the model gets CPU batches.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Points(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 2, generator=g)
        self.y = (self.x[:, 0] > 0).long()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i].to("cuda"), self.y[i].to("cuda")


def train(model, loader, optimizer):
    model.train()
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


def evaluate(model, loader, device):
    model.eval()
    correct = 0
    with torch.no_grad():
        for batch in loader:
            x, y = batch
            correct += (model(x).argmax(1) == y).sum().item()
    return correct


def main():
    torch.manual_seed(0)
    device = torch.device("cuda")
    loader = DataLoader(Points(64), batch_size=16, num_workers=2)
    model = nn.Linear(2, 2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        loss = train(model, loader, optimizer)
        print(f"epoch {epoch}: loss {loss:.4f}, correct {evaluate(model, loader, device)} of {len(loader.dataset)}")


if __name__ == "__main__":
    main()
