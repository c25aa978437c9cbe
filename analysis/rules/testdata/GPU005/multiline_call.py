import torch

model = torch.nn.Linear(8, 8)
loader = [torch.randn(4, 8)]

# The call's parentheses on two lines: the fixes move or remove every line
# of the statement, and their titles stay on one line.
for step, x in enumerate(loader):
    out = model(x)
    torch.cuda.empty_cache(  # want: GPU005
    )
    out.sum().backward()

for step, x in enumerate(loader):
    out = model(x)
    if out.sum() > 0:
        torch.cuda.empty_cache(  # want: GPU005
        )
        print("freed")
print("done")
