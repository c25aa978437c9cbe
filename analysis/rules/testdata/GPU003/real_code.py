# Totals that link every step's graph, in the shapes real projects write.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 1)

    def forward(self, x):
        return self.fc(x)

    def training_step(self, batch):
        x, y = batch
        return nn.functional.mse_loss(self(x), y)


def fit(model, loader, optimizer, log_interval):
    total = 0.0
    running = 0.0
    for i, batch in enumerate(loader):
        loss = model.training_step(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss  # want: GPU003(info) "keeps them alive in host memory. Add"
        # A periodic reset bounds the growth but does not remove it.
        running += loss  # want: GPU003 "until `running = 0.0` resets it every `log_interval` iterations"
        if i % log_interval == 0:
            print(running / log_interval)
            running = 0.0
    print(total)


def hf_train(model, train_dataloader, optimizer):
    total_loss = 0
    for batch in train_dataloader:
        outputs = model(**batch)
        loss = outputs.loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        total_loss += loss  # want: GPU003
    print(total_loss / len(train_dataloader))


def tutorial_train(net, trainloader, criterion, optimizer, epochs):
    for epoch in range(epochs):
        running_loss = 0.0
        for i, data in enumerate(trainloader, 0):
            inputs, labels = data
            optimizer.zero_grad()
            outputs = net(inputs)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()
            running_loss += loss  # want: GPU003 "every `2000` iterations"
            if i % 2000 == 1999:
                print(running_loss / 2000)
                running_loss = 0.0


def reward_totals(score_model, eval_model, batches):
    # Not procedures: `score_model` and `eval_model` name models, and a
    # call of one runs a forward pass.
    total = 0.0
    for batch in batches:
        total += score_model(batch).mean()  # want: GPU003
        total += eval_model(batch).mean()  # want: GPU003
    print(total)


def crf_train(model, training_data, optimizer, epochs):
    # The PyTorch tutorial's BiLSTM-CRF: its loss is a method named for
    # the negative log-likelihood; a second loss is backpropagated, so
    # the total keeps whole graphs.
    for epoch in range(epochs):
        total_nll = 0.0
        for sentence, tags in training_data:
            model.zero_grad()
            nll = model.neg_log_likelihood(sentence, tags)
            objective = model(sentence, tags)
            total_nll += nll  # want: GPU003(warning) "graph and keeps them all alive"
            objective.backward()
            optimizer.step()
        print(total_nll)


def compute_loss_train(model, loader, optimizer):
    # What `model.compute_loss` returns is not known here, but its
    # backward() without a gradient proves it one scalar tensor: the
    # fixes are offered.
    total = 0.0
    for batch in loader:
        loss = model.compute_loss(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss  # want: GPU003
    print(total / len(loader))


def rebound_out(model, loader, optimizer):
    # `out` is reduced to a scalar only after the sum: the backward proves
    # nothing of what was added, so no fix (`.item()` would raise).
    total = 0.0
    for x in loader:
        out = model(x)
        total += out  # want: GPU003 "add `out\.detach\(\)`.*or `out\.item\(\)` if it is one number"
        out = out.sum()
        optimizer.zero_grad()
        out.backward()
        optimizer.step()
    print(total)


def scaled_after_store(model, loader, optimizer, n_tokens):
    # torchtune: the loss is scaled between the sum and its backward;
    # arithmetic on itself keeps the proof that it is one number.
    total = 0.0
    for batch in loader:
        loss = model.compute_loss(batch)
        total += loss  # want: GPU003
        loss = loss / n_tokens
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(total)


def log_total(model, loader, optimizer, criterion):
    # The total is used as a tensor after the loop: `.detach()` is the
    # advice, `.item()` would break `torch.log`.
    total = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss  # want: GPU003 "add `loss\.detach\(\)`.*`total` is used as a tensor later"
    print(torch.log(total))


def helper_total(model, loader, optimizer):
    # The loss comes from a helper of another module; its backward()
    # proves it a scalar with history.
    from losses import get_loss

    total = 0.0
    for x, y in loader:
        loss = get_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        total += loss  # want: GPU003 "add `loss\.item\(\)`"
    print(total / len(loader))
