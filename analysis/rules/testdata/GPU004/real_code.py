# Evaluation loops in the forms real projects write them.
import torch
import torch.nn as nn
from tqdm import tqdm


class Lit(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 2)

    def forward(self, x):
        return self.net(x)

    def validation_step(self, batch):
        return self(batch).sum()


class Evaluator:
    def __init__(self, model, val_dl):
        self.model = model
        self.val_dl = val_dl

    def _predict(self, batch):
        return self.model(batch)

    def run(self):
        self.model.eval()
        dl = tqdm(self.val_dl)
        for batch in dl:  # want: GPU004
            self._predict(batch)

    def run_steps(self, val_loader):
        outputs = [self.model.validation_step(b) for b in val_loader]  # want: GPU004
        return outputs


def evaluate(model, test_loader):
    model.eval()
    correct = 0
    for step, (x, y) in enumerate(test_loader):  # want: GPU004
        correct += (model(x).argmax(1) == y).sum().item()
    return correct


def predict_samples(model, dataset):
    model.eval()
    scores = []
    for i in range(len(dataset)):  # want: GPU004
        x, y = dataset[i]
        scores.append(model(x.unsqueeze(0)).softmax(-1)[0, y].item())
    return scores


def evaluate_iterator(model, data):
    model.eval()
    total = 0.0
    while True:  # want: GPU004
        try:
            x = next(data)
        except StopIteration:
            break
        total += model(x).sum().item()
    return total


def evaluate_accuracy(model, loader):
    # No eval() here, but the function is named for evaluation.
    total, correct = 0, 0
    for x, y in loader:  # want: GPU004
        out = model(x)
        correct += (out.argmax(1) == y).sum().item()
        total += y.numel()
    return correct / total


def predict(model, loader):
    preds = []
    for batch in loader:  # want: GPU004
        preds.append(model(batch).argmax(1).cpu())
    return torch.cat(preds)


def val_torch(nncf_model: torch.nn.Module, validation_data, metric):
    # The same loop over a PyTorch model.
    for batch in validation_data:  # want: GPU004
        out = nncf_model(batch["image"])
        metric.update(out["pred_score"])
    return metric.compute()


def run_forward(model, accelerator, loader):
    # The step runs the unwrapped model itself.
    def forward_step(batch):
        eval_model = accelerator.unwrap_model(model)
        return eval_model(**batch)

    model.eval()
    outs = []
    for batch in loader:  # want: GPU004
        outs.append(forward_step(batch).logits.argmax(-1).cpu())
    return outs


class TorchRegressor:
    # A context imported by name that is not no-grad.
    def predict(self, X):
        self.network.eval()
        y_pred = []
        quiet = _safe_import("contextlib.nullcontext")
        with quiet():
            for inputs in self._build_dataloader(X):  # want: GPU004
                y_pred.append(self.network(**inputs).detach())
        return y_pred


def benchmark_sampling_calls(generator, test_prompts):
    # A generator network's forward pass: no generation arguments.
    outputs = []
    for prompt in test_prompts:  # want: GPU004
        outputs.append(generator(prompt, temperature=0.7).argmax(-1).tolist())
    return outputs


class ActivationEstimator:
    # ART: the batched branch keeps NumPy arrays; the caller that
    # backpropagates takes the other branch's tensors. The loop is reported.
    def get_activations(self, x, batch_size, framework=False):
        self._model.eval()
        if framework:
            return self._model(x)
        results = []
        for m in range(len(x) // batch_size):  # want: GPU004
            out = self._model(x[m * batch_size : (m + 1) * batch_size])
            results.append(out.detach().cpu().numpy())
        return results

    def loss_gradient(self, x, y):
        outputs = self.get_activations(x, 1, framework=True)
        loss = ((outputs - y) ** 2).sum()
        loss.backward()
        return x.grad


class SamplingScorer:
    # merlion's VAE: each batch is reconstructed several times, in a loop
    # of draws (no step loop); the batch loop around it is the evaluation.
    def anomaly_scores(self, loader):
        self.model.eval()
        scores = []
        for window in loader:  # want: GPU004
            window = torch.as_tensor(window, device=self.device)
            total = torch.zeros_like(window)
            for _ in range(self.draws):
                total += self.model(window)
            scores.append((total / self.draws).cpu().numpy())
        return scores


def evaluate_pair(test_loader, model1, model2):
    # Co-teaching: two networks, numbered.
    model1.eval()
    hits = 0
    for images, labels in test_loader:  # want: GPU004
        hits += (model1(images.cuda()).argmax(1).cpu() == labels).sum().item()
    model2.eval()
    for images, labels in test_loader:  # want: GPU004
        hits += (model2(images.cuda()).argmax(1).cpu() == labels).sum().item()
    return hits


class SequenceRegressor(nn.Module):
    # A model that evaluates itself: self.eval(), then self(...) per batch.
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(4, 8)

    def forward(self, x):
        return self.rnn(x)[0]

    def held_out_loss(self, loaders):
        self.eval()
        losses = []
        for loader in loaders:
            for step, (x, y) in enumerate(loader):  # want: GPU004
                losses.append(((self(x) - y) ** 2).mean().item())
        return sum(losses) / len(losses)
