from torch.utils.data import Dataset


class Base(Dataset):
    pass
