import torch
import torch.nn as nn


class HypAR(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(8, 8)

    def inference(self, val_loader):
        # Every caller, in another file, runs it under no_grad (a test's
        # call does not count): not reported.
        preds = []
        for x in val_loader:
            preds.append(self.encoder(x).argmax(1))
        return preds

    def evaluate(self, val_loader):
        # One of its callers runs it with autograd on: reported.
        preds = []
        for x in val_loader:
            preds.append(self.encoder(x).argmax(1))
        return preds

    def denoise(self, val_loader):
        # The closure runs inside denoise, in its callers' grad mode.
        def evaluate_all():
            preds = []
            for x in val_loader:
                preds.append(self.encoder(x).argmax(1))
            return preds

        return evaluate_all()

    def deferred(self, val_loader):
        # The closure is handed back, to run later in whatever grad mode its
        # caller is in: reported.
        def evaluate_later():
            preds = []
            for x in val_loader:
                preds.append(self.encoder(x).argmax(1))
            return preds

        return evaluate_later

    @torch.jit.unused
    def embed(self, val_loader):
        # Decorated, and called only under no_grad in another file.
        preds = []
        for x in val_loader:
            preds.append(self.encoder(x).argmax(1))
        return preds
