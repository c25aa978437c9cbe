import lightning as L
import torch
import torch.nn.functional as F


class LitClassifier(L.LightningModule):
    """The pattern of Lightning's own docs: every step's loss kept for the
    epoch's mean, with its history."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.training_step_outputs = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.model(x), y)
        self.training_step_outputs.append(loss)  # want: GPU002 "Lightning runs `training_step` on every batch and backpropagates the loss it returns"
        return loss

    def on_train_epoch_end(self):
        self.log("train_epoch_mean", torch.stack(self.training_step_outputs).mean())
        self.training_step_outputs.clear()


class LitDict(L.LightningModule):
    def __init__(self, model, step):
        super().__init__()
        self.model = model
        self.step = step
        self.losses = []
        self.logs = []

    def training_step(self, batch, batch_idx):
        loss = self.step(self.model, batch)
        # The "loss" of the returned dict: one tensor, stored as a number.
        self.losses.append(loss)  # want: GPU002(info) "store `loss.item\(\)`"
        return {"loss": loss, "batch": batch_idx}

    def on_train_epoch_end(self):
        print(sum(self.losses) / len(self.losses))
        self.losses = []


class LitLog(L.LightningModule):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.step_logs = []

    def shared_step(self, batch):
        x, y = batch
        return {"loss": F.mse_loss(self.model(x), y), "n": len(x)}

    def training_step(self, batch, batch_idx):
        log = self.shared_step(batch)
        # Returned as it is: a loss or a dict holding one; no fix.
        self.step_logs.append(log)  # want: GPU002 "no fix is offered|No fix is offered"
        return log


class LitOutputs(L.LightningModule):
    """Dicts built around the returned loss: the most common form of the
    pattern in public code."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.training_step_outputs = []
        self.epoch_outputs = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        y_pred = self.model(x)
        loss = F.mse_loss(y_pred, y)
        self.training_step_outputs.append({"loss": loss})  # want: GPU002 "keeps a loss with its autograd history across calls; store it detached"
        outputs = {"loss": loss, "y_true": y}
        self.epoch_outputs.append(outputs)  # want: GPU002 "No fix is offered"
        return loss


class Agent:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.losses = []

    def learn(self, x, y):
        self.optimizer.zero_grad()
        loss = F.mse_loss(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        self.losses.append(loss)  # want: GPU002 "`learn` runs `loss.backward\(\)` each time it is called"


class LitManualBeside(L.LightningModule):
    """Manual optimization here leaves the classes above alone: Lightning
    ignores what this class's step returns, theirs it backpropagates."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.automatic_optimization = False
        self.kept = []

    def training_step(self, batch, batch_idx):
        loss = F.mse_loss(self.model(batch), batch)
        self.kept.append(loss)
        return loss
