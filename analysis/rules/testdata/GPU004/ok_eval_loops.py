import torch
import torch.nn as nn

model = nn.Linear(8, 2)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
val_loader = [(torch.randn(4, 8), torch.randint(0, 2, (4,)))]

model.eval()
with torch.no_grad():
    for x, y in val_loader:
        model(x)

with torch.inference_mode():
    for x, y in val_loader:
        model(x)

with torch.set_grad_enabled(False):
    for x, y in val_loader:
        model(x)


@torch.no_grad()
def validate():
    model.eval()
    for x, y in val_loader:
        model(x)


@torch.inference_mode()
def predict():
    for x, y in val_loader:
        model(x)


def evaluate_inner():
    model.eval()
    for x, y in val_loader:
        model(x)


def run_eval():
    with torch.no_grad():
        evaluate_inner()


# eval() to freeze batch norm while training: there is a backward.
model.eval()
for x, y in val_loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()

# Saliency maps need input gradients.
model.eval()
for x, y in val_loader:
    x.requires_grad_()
    model(x).sum()

# Back in training mode.
model.eval()
model.train()
for x, y in [(torch.randn(4, 8), 0)]:
    model(x)


class Lit(nn.Module):
    def validation_step(self, batch, idx):
        for x in batch:
            self.model(x)


def predict_without_grad():
    torch.set_grad_enabled(False)
    model.eval()
    for x, y in val_loader:
        model(x)
    torch.set_grad_enabled(True)
