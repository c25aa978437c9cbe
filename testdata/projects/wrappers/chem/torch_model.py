import torch

from chem.models import Model


class TorchModel(Model):
    """Wraps a torch module; not a module itself, though its base is named
    Model: its prediction loop runs the module over batches."""

    def __init__(self, model):
        self.model = model

    def predict(self, generator):
        self.model.eval()
        results = []
        for batch in generator:
            output = self.model(batch)
            results.append(output.detach().cpu().numpy())
        return results
