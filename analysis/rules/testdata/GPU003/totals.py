import torch
import torch.nn as nn

model = nn.Linear(8, 1)
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [(torch.randn(4, 8), torch.randn(4, 1))]

total_loss = 0.0
running = 0
epoch_total = torch.zeros(())
for epoch in range(3):
    for x, y in loader:
        out = model(x)
        loss = criterion(out, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total_loss += loss  # want: GPU003(info) "frees the activations, but .total_loss. becomes a tensor whose .grad_fn. chain links every iteration"
        running = running + loss  # want: GPU003
        epoch_total = loss.cpu() + epoch_total  # want: GPU003
        total_loss += criterion(out, y)  # want: GPU003(warning)


class Tracker:
    def __init__(self):
        self.total = 0.0

    def run(self, data):
        for x, y in data:
            out, aux = model(x), None
            self.total += out.mean()  # want: GPU003(warning) "`self.total` becomes a tensor whose graph links every iteration's graph"


def weighted_total(loader, weights):
    total = 0.0
    for (x, y), w in zip(loader, weights):
        loss = criterion(model(x), y)
        # The advice wraps the whole product, not its last operand.
        total += loss * w  # want: GPU003 "add `\(loss \* w\)\.item\(\)`"
    print(total)
