import torch
from torch.utils.data import DataLoader

from data import Squares


def train(model, loader, device):
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    for x, y in loader:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()


def evaluate(model, loader, device):
    total = 0.0
    with torch.no_grad():
        for x, y in loader:
            total += torch.nn.functional.mse_loss(model(x), y).item()
    return total


def main():
    torch.manual_seed(0)
    device = torch.device("cuda")
    model = torch.nn.Linear(1, 1).to(device)
    loader = DataLoader(Squares(64, device), batch_size=8, num_workers=4)
    train(model, loader, device)
    print(round(evaluate(model, loader, device), 3))


if __name__ == "__main__":
    main()
