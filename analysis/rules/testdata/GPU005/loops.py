import torch
import torch.cuda as tc

model = torch.nn.Linear(8, 8)
loader = [torch.randn(4, 8)]

for epoch in range(3):
    for step, x in enumerate(loader):
        try:
            out = model(x)
        except RuntimeError:
            torch.cuda.empty_cache()
            continue
        if step % 100 == 0:
            torch.cuda.empty_cache()
        del out
        torch.cuda.empty_cache()  # want: GPU005 "frees no tensor that is still referenced"
        if x.shape[0] > 2:
            tc.empty_cache()  # want: GPU005
    # Once per epoch, after the batch loop: a phase boundary.
    torch.cuda.empty_cache()

for epoch in range(3):
    model(loader[0])
    torch.cuda.empty_cache()

step = 0
while step < 10:
    model(loader[0]).sum().backward()
    torch.accelerator.memory.empty_cache()  # want: GPU005
    step += 1

torch.cuda.empty_cache()


def cleanup():
    torch.cuda.empty_cache()


def train_microbatches(batch, optimizer):
    for part in batch.chunk(4):
        model(part).sum().backward()
    optimizer.step()


def train(loader, optimizer):
    # The helper loops over micro-batches, but this loop hands it batches:
    # still once per batch.
    for batch in loader:
        train_microbatches(batch, optimizer)
        torch.cuda.empty_cache()  # want: GPU005


def train_steps(data_iter, optimizer, n_steps):
    # Batches pulled with next() and handed over: once per step too.
    for step in range(n_steps):
        train_microbatches(next(data_iter), optimizer)
        torch.cuda.empty_cache()  # want: GPU005
