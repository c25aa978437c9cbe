# Losses kept in a list on purpose: summed for one backward() per step,
# or stacked for a REINFORCE update. Detaching them would cut gradients.
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [(torch.randn(2, 4), torch.randn(2, 1)) for _ in range(4)]

micro_losses = []
for step, (x, y) in enumerate(loader):
    micro_losses.append(criterion(model(x), y))
    if step % 2 == 1:
        optimizer.zero_grad()
        torch.stack(micro_losses).sum().backward()
        optimizer.step()
        print(step, [round(p.grad.norm().item(), 6) for p in model.parameters()])
        micro_losses = []

log_probs = []
for step, (x, y) in enumerate(loader):
    log_probs.append(torch.log_softmax(model(x).squeeze(1), 0)[0])
policy_loss = -torch.stack(log_probs).sum()
optimizer.zero_grad()
policy_loss.backward()
print("policy", [round(p.grad.norm().item(), 6) for p in model.parameters()])
