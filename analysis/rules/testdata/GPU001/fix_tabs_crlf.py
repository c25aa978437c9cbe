import torch
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda")


class Tabbed(Dataset):
	def __len__(self):
		return 8

	def __getitem__(self, i):
		x = torch.full((2,), float(i)).to(device)  # want: GPU001
		return x, torch.tensor(i).to(device, torch.float32)  # want: GPU001


loader = DataLoader(Tabbed(), batch_size=4, num_workers=2)
for x, y in loader:
	print(x.sum(), y.sum())
