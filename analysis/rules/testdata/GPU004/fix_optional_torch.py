# torch is an optional dependency: imported for type checkers at module
# level and, at run time, inside the functions that use it.
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch


class AttackModel:
    def fit(self, x):
        import torch

        self.model = torch.nn.Linear(x.shape[1], 2)

    def infer(self, loader):
        # No torch here at run time: the fix imports it.
        self.model.eval()
        predictions = []
        for x in loader:  # want: GPU004
            predictions.append(self.model(x).detach().numpy())
        return np.concatenate(predictions)

    def activations(self, loader):
        import torch as th

        self.model.eval()
        out = []
        for x in loader:  # want: GPU004
            out.append(self.model(x).detach().numpy())
        return out
