import lightning as L
import torch
import torch.nn.functional as F


class LitModel(L.LightningModule):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.training_step_outputs = []
        self.validation_step_outputs = []
        self.window = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.model(x), y)
        self.training_step_outputs.append(loss.detach())
        # A window of the last few: elements are taken out below.
        self.window.append(loss)
        if len(self.window) > 4:
            self.window.pop(0)
        return loss

    def validation_step(self, batch, batch_idx):
        # Lightning validates under no_grad.
        x, y = batch
        loss = F.cross_entropy(self.model(x), y)
        self.validation_step_outputs.append(loss)


class LitDetachedOutputs(L.LightningModule):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.training_step_outputs = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self.model(x), y)
        acc = (self.model(x).argmax(1) == y).float().mean()
        self.training_step_outputs.append({"loss": loss.detach(), "y": y})
        # Not what the step returns, nor built around it.
        self.training_step_outputs.append({"acc": acc})
        return loss


class Manual(L.LightningModule):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.automatic_optimization = False
        self.kept = []

    def training_step(self, batch, batch_idx):
        # Lightning ignores what a manual step returns.
        out = self.model(batch)
        self.kept.append(out)
        return out


class Accumulator:
    def __init__(self, model):
        self.model = model
        self.pending = []
        self.fresh = []

    def step(self, x, y):
        loss = F.mse_loss(self.model(x), y)
        loss.backward()
        # Summed and backpropagated later: keeping the graphs is the point.
        self.pending.append(loss)

    def flush(self):
        torch.stack(self.pending).sum().backward()
        self.pending = []

    def step_fresh(self, x, y):
        loss = F.mse_loss(self.model(x), y)
        loss.backward()
        self.fresh = []
        self.fresh.append(loss)
        return len(self.fresh)


class Recorder:
    def __init__(self, model):
        self.model = model
        self.outputs = []

    def step(self, x, y):
        loss = F.mse_loss(self.model(x), y)
        loss.backward()
        self.outputs.append(loss)

    def epoch_end(self):
        # .numpy() raises on tensors that require grad: code that runs
        # stores none with history here.
        import numpy as np
        print(np.array(self.outputs).mean())
        self.outputs = []
