import torch
import torch.nn as nn

model = nn.Linear(8, 1)
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [(torch.randn(4, 8), torch.randn(4, 1))]

total, as_float, detached, count = 0.0, 0.0, 0.0, 0
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    total += loss.item()
    as_float += float(loss)
    detached += loss.detach()
    count += 1

# Gradient accumulation: the accumulated loss is what gets backpropagated.
accumulated = 0
for step, (x, y) in enumerate(loader):
    accumulated += criterion(model(x), y) / 4
    if step % 4 == 3:
        accumulated.backward()
        optimizer.step()
        accumulated = 0

# Reset every iteration: the total lives one iteration.
for x, y in loader:
    step_loss = 0
    step_loss += criterion(model(x), y)
    print(step_loss.item())

with torch.no_grad():
    val_total = 0.0
    for x, y in loader:
        val_total += criterion(model(x), y)
