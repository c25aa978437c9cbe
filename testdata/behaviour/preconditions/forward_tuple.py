# A tuple of hidden states accumulated in forward and stacked: `.detach()`
# on `(h,)` would raise, and detaching h would cut the gradients.
import torch
import torch.nn as nn

torch.manual_seed(0)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, h):
        outputs = ()
        for layer in self.layers:
            h = torch.tanh(layer(h))
            outputs += (h,)
        states = []
        for out in outputs:
            states.append(out * 2)
        return torch.stack(states).sum(0)


model = Encoder()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [torch.randn(2, 4) for _ in range(3)]
for step, x in enumerate(loader):
    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, round(loss.item(), 6), [round(p.grad.norm().item(), 6) for p in model.parameters()])
