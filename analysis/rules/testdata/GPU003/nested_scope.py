import torch
import torch.nn as nn

model = nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [(torch.randn(4, 8), torch.randn(4, 1))]


def train(epochs):
    total = 0.0

    def report():
        # The helper's own `out`: it does not make `total` what train returns.
        out = total
        return out

    for epoch in range(epochs):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss  # want: GPU003
    out = epochs
    return out
