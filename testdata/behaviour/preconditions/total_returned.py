# vramlint-behaviour: the fixes apply (the test checks that they do)
# A running total returned to the caller, which uses it as a tensor: the
# fix may detach it (nothing backpropagates through it) but must not turn
# it into a float.
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [(torch.randn(2, 4), torch.randn(2, 1)) for _ in range(4)]


def train_epoch():
    total = 0.0
    outputs = []
    for x, y in loader:
        out = model(x)
        loss = criterion(out, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss
        outputs.append(loss)
    return total, outputs


for epoch in range(2):
    total, outputs = train_epoch()
    print(epoch, round(total.item() / len(loader), 6), round(torch.stack(outputs).sum().item(), 6))
