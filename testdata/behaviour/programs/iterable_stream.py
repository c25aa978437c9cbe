# An IterableDataset that shards a stream across workers and yields samples
# already on the device.
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start = info.id if info else 0
        step = info.num_workers if info else 1
        for i in range(start, self.n, step):
            yield torch.full((4,), float(i)).cuda()


def main():
    loader = DataLoader(Stream(40), batch_size=5, num_workers=2)
    seen = 0
    checksum = 0.0
    for x in loader:
        checksum += float(x.sum())
        seen += x.shape[0]
        torch.cuda.empty_cache()
    print(f"samples {seen}, checksum {checksum:.1f}")


if __name__ == "__main__":
    main()
