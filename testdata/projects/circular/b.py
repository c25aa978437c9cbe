from torch.utils.data import Dataset

from a import A  # a imports b too: a circular import


class B(Dataset):
    pass


class C(A):
    pass
