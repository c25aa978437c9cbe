import torch

for step in range(3):
    torch.cuda.empty_cache()  # free what we can  # want: GPU005
print("done")
