# The seed article's program, shortened: .cuda() in __getitem__ with 4 workers.
import torch
from torch.utils.data import Dataset, DataLoader
import numpy as np


class CustomDataset(Dataset):
    def __init__(self, data_paths):
        self.data_paths = data_paths

    def __len__(self):
        return len(self.data_paths)

    def __getitem__(self, idx):
        image = np.load(self.data_paths[idx]["image"]).astype(np.float32)
        label = np.load(self.data_paths[idx]["label"]).astype(np.int64)
        image = torch.tensor(image).cuda()  # want: GPU001 "runs in 4 DataLoader workers; move it to the training loop .*is_available.*fork.*spawn.*pin_memory=True. raises"
        label = torch.tensor(label).cuda()  # want: GPU001
        return image, label


dataset = CustomDataset([])
dataloader = DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
for epoch in range(5):
    for i, batch in enumerate(dataloader):
        images, labels = batch
        output = images + 1
        loss = output.sum()
