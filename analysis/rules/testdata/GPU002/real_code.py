# Containers that outlive training or evaluation steps, in the shapes real
# projects write them: through methods and helpers defined in the file.
import torch
import torch.nn as nn


class LitModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 2)
        self.criterion = nn.CrossEntropyLoss()

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch):
        x, y = batch
        return self.criterion(self(x), y)


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.history = []

    def _process_one_batch(self, x):
        return self.model(x)

    def fit(self, train_loader):
        for batch in train_loader:
            loss = self.model.training_step(batch)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.history.append(loss)  # want: GPU002

    def collect(self, loader):
        preds = []
        for x, _ in loader:
            out = self._process_one_batch(x)
            preds.append(out)  # want: GPU002
        return preds


def train_step(model, criterion, x, y):
    out = model(x)
    return criterion(out, y)


def run(model, criterion, optimizer, loader, epochs):
    losses = []
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            loss = train_step(model, criterion, x, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss)  # want: GPU002
    return losses


def fit_unresolved(model, loader, opt):
    # `loss` is not defined in this file: by convention a model's loss
    # method returns the loss with its graph.
    log = {}
    for i, (x, y) in enumerate(loader):
        loss = model.loss(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log[i] = loss  # want: GPU002
    return log


def fit_full_batch(model, criterion, x, y, optimizer, epochs):
    # Lists bound together in one tuple assignment.
    history, norms = [], []
    for epoch in range(epochs):
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(loss)  # want: GPU002
        norms.append(float(loss))
    return history, norms


def first_prediction(model, x):
    pred = model(x)
    return pred


def gather_predictions(model, loader):
    # `pred` is a list here, whatever other functions bind to that name.
    pred = []
    for batch in loader:
        pred.append(model(batch))  # want: GPU002
    return torch.cat(pred)


all_losses = []


def train_global(model, criterion, loader, optimizer):
    # A module-level list the training loop appends to.
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        all_losses.append(loss)  # want: GPU002


def features_detached_too_late(loader, net):
    # numpy() after a detach proves nothing about what the list holds.
    feats = []
    for x, _ in loader:
        feats.append(net(x))  # want: GPU002
    return torch.cat(feats).detach().numpy()


def gradient_penalty(model, loader, criterion):
    # create_graph=True: the gradients keep a graph (to backpropagate a
    # penalty through them).
    penalties = []
    for x, y in loader:
        x.requires_grad_()
        loss = criterion(model(x), y)
        g = torch.autograd.grad(loss, x, create_graph=True)[0]
        penalties.append(g.pow(2).sum())  # want: GPU002
    return penalties


def train_compiled_step(model, loader, criterion, optimizer):
    # The compiled step returns its loss with the graph.
    def step(x, y):
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    step = torch.compile(step)
    history = []
    for x, y in loader:
        history.append(step(x, y))  # want: GPU002


def train_problem(model, loader, optimizer, metric):
    # neuromancer: backward() on `output[metric]` without a gradient says
    # it is one number; the list is stacked, so the fix keeps tensors.
    losses = []
    for batch in loader:
        output = model(batch)
        optimizer.zero_grad()
        output[metric].backward()
        optimizer.step()
        losses.append(output[metric])  # want: GPU002 "with its autograd history; store `output\[metric\].detach\(\)`"
    return torch.mean(torch.stack(losses))


def train_energy(model, loader, optimizer):
    # GraphEBM: the mean of the stored losses is a tensor whose `.item()`
    # is printed; floats would have none.
    losses = []
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss)  # want: GPU002 "store `loss.detach\(\)`"
    print((sum(losses) / len(losses)).item())


def train_vector_backward(model, loader, optimizer):
    # backward() with a gradient: the output need not be one number.
    outs = []
    for x in loader:
        out = model(x)
        out.backward(gradient=torch.ones_like(out))
        optimizer.step()
        outs.append(out)  # want: GPU002 "store `out.detach\(\)`"


def train_vector_backward_positional(model, loader, optimizer):
    outs = []
    for x in loader:
        out = model(x)
        out.backward(torch.ones_like(out))
        optimizer.step()
        outs.append(out)  # want: GPU002 "store `out.detach\(\)`"


def collect_validation(model_w, loader):
    # A validation step is no whole training step: its outputs keep the graph.
    outs = []
    for batch in loader:
        outs.append(model_w.validation_step(batch))  # want: GPU002


def train_with_steps(model_w, loader, optimizer):
    # The loop differentiates what the training step returns.
    losses = []
    for batch in loader:
        loss = model_w.train_step(batch)
        loss.backward()
        optimizer.step()
        losses.append(loss)  # want: GPU002


import transformers


class HubLM:
    # The same loop over a PyTorch model from the Hub.
    def __init__(self, path):
        self.model = transformers.AutoModelForCausalLM.from_pretrained(path)

    def logits(self, chunks, steps):
        res = []
        for chunk in chunks:
            outputs = []
            for i in range(1, steps):
                inputs = self.model.prepare_inputs_for_decode(chunk[:, : i + 1])
                outputs.append(self.model.forward(**inputs).logits)  # want: GPU002
            res.extend(torch.concat(outputs, dim=1).argmax(-1).tolist())
        return res


class PerceptualHistory:
    # A frozen network keeps the graph of what it is given: features of a
    # generator's output carry the generator's history.
    def __init__(self, generator):
        self.generator = generator
        self.vgg = torch.nn.Sequential(torch.nn.Linear(8, 8)).requires_grad_(False)

    def collect(self, noise_batches):
        feats = []
        for z in noise_batches:
            fake = self.generator(z)
            feats.append(self.vgg(fake))  # want: GPU002
        print(len(feats))


def predict_in_batches(model, x, batch_size):
    # Dimension 0 is the samples': each iteration is a batch.
    preds = []
    for i in range(0, x.shape[0], batch_size):  # noqa: GPU004 (its own rule's case; here GPU002's)
        preds.append(model(x[i : i + batch_size]))  # want: GPU002
    print(len(preds))


def predict_unpacked(model, x, batch_size):
    # The first size unpacked from a shape is the samples': batches.
    n, d = x.shape
    preds = []
    for i in range(0, n, batch_size):  # noqa: GPU004 (its own rule's case; here GPU002's)
        preds.append(model(x[i : i + batch_size]))  # want: GPU002
    print(len(preds))


def predict_all(model, batches):
    # An eval-mode helper that keeps its graphs: a method of the same name,
    # whose result a training step backpropagates, is not a call of it.
    model.eval()
    outs = []
    for i in range(len(batches)):  # noqa: GPU004 (its own rule's case; here GPU002's)
        outs.append(model(batches[i]))  # want: GPU002
    return outs


class HeadTrainer:
    def step(self, x, y):
        pred = self.head.predict_all(x)
        ((pred - y) ** 2).mean().backward()


def rebound_outputs(model, loader, optimizer):
    # `out` becomes a scalar only after it is stored: no `.item()` (it
    # would raise on the stored outputs), and a model's output of unknown
    # structure gets no `.detach()` either.
    outs = []
    for x in loader:
        out = model(x)
        outs.append(out)  # want: GPU002 "store `out.detach"
        out = out.sum()
        optimizer.zero_grad()
        out.backward()
        optimizer.step()
    print(len(outs))


def pooled_outputs(model, loader):
    # The same layer applied to a model's output keeps its history.
    pool = nn.AvgPool2d(2)
    kept = []
    for x, _ in loader:
        kept.append(pool(model(x)))  # want: GPU002
    print(len(kept))


def helper_losses(model, loader, optimizer):
    # The loss comes from a helper of another module, of which nothing is
    # known; its backward() proves it a scalar with history.
    from losses import get_loss

    loss_list = []
    for x, y in loader:
        loss = get_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        loss_list.append(loss)  # want: GPU002
    print(sum(loss_list) / len(loss_list))
