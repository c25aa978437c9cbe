# Containers of modules built in __init__ and of processes: no tensor
# history, nothing to detach.
import torch
import torch.multiprocessing as mp
import torch.nn as nn

torch.manual_seed(0)


class Heads(nn.Module):
    def __init__(self, n):
        super().__init__()
        heads = []
        for i in range(n):
            heads.append(nn.Linear(4, 1))
        self.heads = nn.ModuleList(heads)

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=1)


def work(rank):
    pass


if __name__ == "__main__":
    procs = []
    for rank in range(2):
        p = mp.Process(target=work, args=(rank,))
        p.start()
        procs.append(p)
    for p in procs:
        p.join()
    model = Heads(3)
    opts = []
    for i in range(2):
        opts.append(torch.optim.SGD(model.parameters(), lr=0.1))
    loader = [torch.randn(2, 4) for _ in range(3)]
    for step, x in enumerate(loader):
        loss = model(x).sum()
        opts[0].zero_grad()
        loss.backward()
        opts[0].step()
        print(step, round(loss.item(), 6), [p.exitcode for p in procs])
