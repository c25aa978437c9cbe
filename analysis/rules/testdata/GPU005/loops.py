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
