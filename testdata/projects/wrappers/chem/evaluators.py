import torch
from torch.utils.data import DataLoader

from .policy import EvalPolicy, PolicyNet


def metric_evaluator(policy: EvalPolicy, dataset):
    # A wrapper of another file, whose bases (through a third class) are
    # plain: its forward is no model call.
    dataloader = DataLoader(dataset)

    def _evaluate(ctx):
        for inputs, label in dataloader:
            ctx.outputs.append(policy.forward(inputs))

    return _evaluate


def evaluate_net(policy: PolicyNet, val_loader):
    # A model class of another file.
    policy.eval()
    for inputs, label in val_loader:
        policy.forward(inputs)


from .compiled import CompiledLM


def score_compiled(path, val_loader):
    # A class of another file deriving from another runtime's model.
    model = CompiledLM.from_pretrained(path)
    scores = []
    for inputs in val_loader:
        scores.append(model(inputs).logits.argmax(-1))
    return scores
