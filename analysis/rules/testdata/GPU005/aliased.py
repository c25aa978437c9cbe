import torch
from torch.cuda import empty_cache as free_cache

model = torch.nn.Linear(8, 8)
for step in range(10):
    out = model(torch.randn(4, 8))
    del out
    free_cache()  # want: GPU005
