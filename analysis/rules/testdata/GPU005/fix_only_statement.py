import torch

model = torch.nn.Linear(8, 8)
loader = [torch.randn(4, 8)]

for step, x in enumerate(loader):
    out = model(x)
    if out.sum() > 0:
        torch.cuda.empty_cache()  # free what we can  # want: GPU005
print("done")
