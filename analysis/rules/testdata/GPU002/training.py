import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(x)


net = Net().to("cuda")
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
loader = [(torch.randn(4, 8), torch.randint(0, 2, (4,)))]

history = []
preds = []
cpu_outputs = []
by_step = {}
seen = set()
for step, (x, y) in enumerate(loader):
    logits = net(x)
    loss = criterion(logits, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    history.append(loss)  # want: GPU002 "grad_fn. chain and a small GPU block"
    preds.append(logits)  # want: GPU002 "store .logits.detach\(\)."
    cpu_outputs.append(logits.cpu())  # want: GPU002 "does not detach"
    by_step[step] = loss  # want: GPU002
    seen.add(F.cross_entropy(logits, y))  # want: GPU002 "every activation"
    history.extend([logits[0], logits[1]])  # want: GPU002
    history.insert(0, loss * 2)  # want: GPU002
