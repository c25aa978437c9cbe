from . import metrics
from .metrics import batch_error, batch_error_no_grad, train_step


def validate(model, loader):
    total = 0
    for batch in loader:
        total += batch_error(model, batch)
    return float(total) / len(loader)


def gather(model, loader):
    errors = []
    for batch in loader:
        errors.append(metrics.batch_error(model, batch))
    return errors


def validate_no_grad(model, loader):
    total = 0
    for batch in loader:
        total += batch_error_no_grad(model, batch)
    return float(total) / len(loader)


def fit(model, optimizer, loader):
    history = []
    for batch in loader:
        history.append(train_step(model, optimizer, batch))
    return history
