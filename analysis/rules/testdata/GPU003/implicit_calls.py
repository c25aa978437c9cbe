# Python runs __init__ when a class is called and __call__ when an object
# is: their calls by name are not all their calls. One made under no_grad
# (a re-initialisation, a quiet score) does not put every run of the
# method under no_grad; the constructor and the call below run with
# autograd on.
import torch
import torch.nn as nn

model = nn.Linear(8, 1)
loader = [(torch.randn(4, 8), torch.randn(4, 1))]


class Summary:
    def __init__(self, data):
        self.total = 0.0
        for x, y in data:
            self.total += model(x).mean()  # want: GPU003

    def refresh(self, data):
        with torch.no_grad():
            self.__init__(data)


class Scorer:
    def __init__(self):
        self.total = 0.0

    def __call__(self, data):
        for x, y in data:
            self.total += model(x).mean()  # want: GPU003


def score_quietly(scorer, data):
    with torch.no_grad():
        scorer.__call__(data)


class Quiet:
    # A method called by its name, each time under no_grad: its body runs
    # so.
    def __init__(self):
        self.total = 0.0

    def score(self, data):
        for x, y in data:
            self.total += model(x).mean()


def quiet_score(quiet, data):
    with torch.no_grad():
        quiet.score(data)


summary = Summary(loader)
scorer = Scorer()
scorer(loader)
