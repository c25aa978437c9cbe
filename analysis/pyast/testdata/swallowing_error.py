import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda")


class Data0(Dataset):
    """Samples for experiment 0."""

    def __init__(self, n):
        self.x = torch.randn(n, 16)
        self.y = torch.randint(0, 4, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        return x.cuda(), self.y[i]


class Model0(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train0(epochs=3):
    model = Model0().to(device)
    loader = DataLoader(Data0(256), batch_size=32, num_workers=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    history = []
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            out = model(x.to(device))
            loss = F.cross_entropy(out, y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss)
            torch.cuda.empty_cache()
    return history


class Data1(Dataset):
    """Samples for experiment 1."""

    def __init__(self, n):
        self.x = torch.randn(n, 16)
        self.y = torch.randint(0, 4, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        return x, self.y[i]


class Model1(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train1(epochs=3):
    model = Model1().to(device)
    loader = DataLoader(Data1(256), batch_size=32, num_workers=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    history = []
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            out = model(x.to(device))
            loss = F.cross_entropy(out, y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss.item())
    return history


class Data2(Dataset):
    """Samples for experiment 2."""

    def __init__(self, n):
        self.x = torch.randn(n, 16)
        self.y = torch.randint(0, 4, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        return x, self.y[i]


class Model2(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train2(epochs=3):
    model = Model2().to(device)
    loader = DataLoader(Data2(256), batch_size=32, num_workers=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    history = []
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            out = model(x.to(device))
            loss = F.cross_entropy(out, y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss.item())
    return history


class Data3(Dataset):
    """Samples for experiment 3."""

    def __init__(self, n):
        self.x = torch.randn(n, 16)
        self.y = torch.randint(0, 4, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        return x, self.y[i]


class Model3(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train3(epochs=3):
    model = Model3().to(device)
    loader = DataLoader(Data3(256), batch_size=32, num_workers=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    history = []
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            out = model(x.to(device))
            loss = F.cross_entropy(out, y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss.item())
    return history


class Data4(Dataset):
    """Samples for experiment 4."""

    def __init__(self, n):
        self.x = torch.randn(n, 16)
        self.y = torch.randint(0, 4, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        return x, self.y[i]


class Model4(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train4(epochs=3):
    model = Model4().to(device)
    loader = DataLoader(Data4(256), batch_size=32, num_workers=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    history = []
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            out = model(x.to(device))
            loss = F.cross_entropy(out, y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss.item())
    return history


class Data5(Dataset):
    """Samples for experiment 5."""

    def __init__(self, n):
        self.x = torch.randn(n, 16)
        self.y = torch.randint(0, 4, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        return x, self.y[i]


class Model5(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train5(epochs=3):
    model = Model5().to(device)
    loader = DataLoader(Data5(256), batch_size=32, num_workers=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    history = []
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            out = model(x.to(device))
            loss = F.cross_entropy(out, y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss)
    return history


class Data6(Dataset):
    """Samples for experiment 6."""

    def __init__(self, n):
        self.x = torch.randn(n, 16)
        self.y = torch.randint(0, 4, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        return x, self.y[i]


class Model6(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train6(epochs=3):
    model = Model6().to(device)
    loader = DataLoader(Data6(256), batch_size=32, num_workers=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    history = []
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            out = model(x.to(device))
            loss = F.cross_entropy(out, y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss.item())
    return history


broken = foo(
class Data7(Dataset):
    """Samples for experiment 7."""

    def __init__(self, n):
        self.x = torch.randn(n, 16)
        self.y = torch.randint(0, 4, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        return x.cuda(), self.y[i]


class Model7(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train7(epochs=3):
    model = Model7().to(device)
    loader = DataLoader(Data7(256), batch_size=32, num_workers=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    history = []
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            out = model(x.to(device))
            loss = F.cross_entropy(out, y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss.item())
    return history


class Data8(Dataset):
    """Samples for experiment 8."""

    def __init__(self, n):
        self.x = torch.randn(n, 16)
        self.y = torch.randint(0, 4, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        return x, self.y[i]


class Model8(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train8(epochs=3):
    model = Model8().to(device)
    loader = DataLoader(Data8(256), batch_size=32, num_workers=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    history = []
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            out = model(x.to(device))
            loss = F.cross_entropy(out, y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss.item())
    return history


class Data9(Dataset):
    """Samples for experiment 9."""

    def __init__(self, n):
        self.x = torch.randn(n, 16)
        self.y = torch.randint(0, 4, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        return x, self.y[i]


class Model9(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train9(epochs=3):
    model = Model9().to(device)
    loader = DataLoader(Data9(256), batch_size=32, num_workers=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    history = []
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            out = model(x.to(device))
            loss = F.cross_entropy(out, y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss.item())
            torch.cuda.empty_cache()
    return history


class Data10(Dataset):
    """Samples for experiment 10."""

    def __init__(self, n):
        self.x = torch.randn(n, 16)
        self.y = torch.randint(0, 4, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        return x, self.y[i]


class Model10(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train10(epochs=3):
    model = Model10().to(device)
    loader = DataLoader(Data10(256), batch_size=32, num_workers=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    history = []
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            out = model(x.to(device))
            loss = F.cross_entropy(out, y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss)
    return history


class Data11(Dataset):
    """Samples for experiment 11."""

    def __init__(self, n):
        self.x = torch.randn(n, 16)
        self.y = torch.randint(0, 4, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        return x, self.y[i]


class Model11(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train11(epochs=3):
    model = Model11().to(device)
    loader = DataLoader(Data11(256), batch_size=32, num_workers=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    history = []
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            out = model(x.to(device))
            loss = F.cross_entropy(out, y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss.item())
    return history


class Data12(Dataset):
    """Samples for experiment 12."""

    def __init__(self, n):
        self.x = torch.randn(n, 16)
        self.y = torch.randint(0, 4, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        return x, self.y[i]


class Model12(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train12(epochs=3):
    model = Model12().to(device)
    loader = DataLoader(Data12(256), batch_size=32, num_workers=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    history = []
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            out = model(x.to(device))
            loss = F.cross_entropy(out, y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss.item())
    return history


class Data13(Dataset):
    """Samples for experiment 13."""

    def __init__(self, n):
        self.x = torch.randn(n, 16)
        self.y = torch.randint(0, 4, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        return x, self.y[i]


class Model13(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train13(epochs=3):
    model = Model13().to(device)
    loader = DataLoader(Data13(256), batch_size=32, num_workers=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    history = []
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            out = model(x.to(device))
            loss = F.cross_entropy(out, y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss.item())
    return history


class Data14(Dataset):
    """Samples for experiment 14."""

    def __init__(self, n):
        self.x = torch.randn(n, 16)
        self.y = torch.randint(0, 4, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        return x.cuda(), self.y[i]


class Model14(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train14(epochs=3):
    model = Model14().to(device)
    loader = DataLoader(Data14(256), batch_size=32, num_workers=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    history = []
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            out = model(x.to(device))
            loss = F.cross_entropy(out, y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss.item())
    return history
