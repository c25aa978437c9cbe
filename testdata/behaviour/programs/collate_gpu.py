# A collate function that moves each batch to the device inside the workers.
import torch
from torch.utils.data import DataLoader, TensorDataset


def to_gpu_batch(samples):
    xs = torch.stack([s[0] for s in samples])
    ys = torch.stack([s[1] for s in samples])
    return xs.cuda(), ys.cuda()


def main():
    g = torch.Generator().manual_seed(3)
    data = TensorDataset(torch.randn(60, 3, generator=g), torch.randn(60, generator=g))
    loader = DataLoader(data, batch_size=12, num_workers=2, collate_fn=to_gpu_batch)
    w = torch.zeros(3).cuda()  # the weights live on the device, as the batches do
    for epoch in range(2):
        for xs, ys in loader:
            residual = xs @ w - ys
            w -= 0.1 * (xs.T @ residual) / len(ys)
        print(f"epoch {epoch}: w = {[round(v, 4) for v in w.tolist()]}")


if __name__ == "__main__":
    main()
