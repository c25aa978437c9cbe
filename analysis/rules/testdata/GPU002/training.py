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
    history.append(loss)  # want: GPU002(info) "grad_fn. chain and a small GPU block"
    preds.append(logits)  # want: GPU002(warning) "store .logits.detach\(\)."
    cpu_outputs.append(logits.cpu())  # want: GPU002 "does not detach"
    by_step[step] = loss  # want: GPU002
    seen.add(F.cross_entropy(logits, y))  # want: GPU002(warning) "every activation"
    history.extend([logits[0], logits[1]])  # want: GPU002
    history.insert(0, loss * 2)  # want: GPU002

# The step's backward runs through what is stored, after the store: the
# activations are freed, the history (grad_fn nodes) stays.
certified_history = []
for x, y in loader:
    certified = criterion(net(x), y) * 0.5
    certified_history.append(certified)  # want: GPU002 "step's .backward\(\). frees the graph's activations"
    total = certified + criterion(net(x), y)
    optimizer.zero_grad()
    total.backward()
    optimizer.step()

# A backward that keeps the graph frees nothing.
kept_outputs = []
for x, y in loader:
    out = net(x)
    kept_outputs.append(out)  # want: GPU002 "activations its graph saved stay in memory"
    criterion(out, y).backward(retain_graph=True)
    optimizer.step()

outputs = []
for x, y in loader:
    out = net(x)
    outputs.append(out)  # want: GPU002 "step's .backward\(\). frees the activations its graph saved"
    criterion(out, y).backward()
    optimizer.step()

# Under no_grad, a move to where the tensor already is returns the tensor
# itself, graph and all.
aliases = []
for x, y in loader:
    out = net(x)
    criterion(out, y).backward()
    with torch.no_grad():
        same = out.to("cuda")
    aliases.append(same)  # want: GPU002

# The mean of a term of the loss, taken after the loss's backward: the
# term's activations are freed.
reg_history = []
for x, y in loader:
    out = net(x)
    loss_reg = (out**2).mean(dim=1)
    loss = criterion(out, y) + loss_reg.mean()
    loss.backward()
    optimizer.step()
    reg_history.append(loss_reg.mean())  # want: GPU002 "step's .backward\(\). frees the graph's activations"


def fwd_bwd(x, y):
    loss = criterion(net(x), y)
    loss.backward()
    return loss


step_losses = []
for x, y in loader:
    step_losses.append(fwd_bwd(x, y))  # want: GPU002 "step's .backward\(\). frees the activations its graph saved"
    optimizer.step()


def weighted_history(weights):
    history = []
    for (x, y), w in zip(loader, weights):
        loss = criterion(model(x), y)
        # The advice wraps the whole product, not its last operand.
        history.append(loss * w)  # want: GPU002 "store `\(loss \* w\)\.item\(\)`"
    print(history)
