# The seed article's program, unchanged but for a smaller fake data set.
import torch
from torch.utils.data import Dataset, DataLoader
import numpy as np
import os  # to create the fake data

# --- prepare fake data ---
os.makedirs('dummy_data', exist_ok=True)
rng = np.random.default_rng(0)
for i in range(64):
    np.save(f'dummy_data/img_{i}.npy', rng.random((3, 8, 8)).astype(np.float32))
    np.save(f'dummy_data/label_{i}.npy', rng.integers(0, 10, size=()).astype(np.int64))
# --- fake data ready ---


class CustomDataset(Dataset):
    def __init__(self, data_paths):
        self.data_paths = data_paths

    def __len__(self):
        return len(self.data_paths)

    def __getitem__(self, idx):
        # load the sample from disk
        image_path = self.data_paths[idx]['image']
        label_path = self.data_paths[idx]['label']
        try:
            image = np.load(image_path).astype(np.float32)
            label = np.load(label_path).astype(np.int64)
        except FileNotFoundError:
            print(f"Warning: File not found for index {idx}. Skipping.")
            image = np.zeros((3, 8, 8), dtype=np.float32)
            label = np.int64(0)

        # !!! the problem: the sample is put on the GPU inside the Dataset !!!
        image = torch.tensor(image).cuda()
        label = torch.tensor(label).cuda()
        return image, label


data_paths = [{'image': f'dummy_data/img_{i}.npy', 'label': f'dummy_data/label_{i}.npy'} for i in range(64)]

dataset = CustomDataset(data_paths)
# num_workers > 0 is one of the triggers
dataloader = DataLoader(dataset, batch_size=16, num_workers=2, pin_memory=True)

print("Starting simulated training loop...")
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

for epoch in range(2):
    print(f"--- Epoch {epoch+1} ---")
    for i, batch in enumerate(dataloader):
        if batch is None:
            print(f"Skipping batch {i} due to loading error.")
            continue

        # the batch is already on the GPU
        images, labels = batch
        print(f"Batch {i}: images on {images.device}, labels on {labels.device}")

        try:
            output = images + 1
            loss = output.sum()
        except Exception as e:
            print(f"Error during batch {i} processing: {e}")
            if 'images' in locals(): del images
            if 'labels' in locals(): del labels
            if 'loss' in locals(): del loss
            if 'output' in locals(): del output
            torch.cuda.empty_cache()
            continue

        print(f"Batch {i} processed. loss {loss.item():.3f}")

        # !!! deleting by hand does not help !!!
        del images
        del labels
        del loss
        del output
        # !!! empty_cache() does not stop the growth either !!!
        torch.cuda.empty_cache()

    print(f"--- Epoch {epoch+1} finished ---")

print("Simulated training loop finished.")

import shutil
shutil.rmtree('dummy_data')
print("Cleaned up dummy data.")
