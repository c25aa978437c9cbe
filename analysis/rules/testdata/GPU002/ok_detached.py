# Values without autograd history, containers that live one iteration,
# lists that are meant to reach backward.
import torch
import torch.nn as nn
from torch.distributions import Categorical

model = nn.Linear(8, 2)
policy = nn.Linear(4, 2)
criterion = nn.MSELoss()
loader = [(torch.randn(4, 8), torch.randn(4, 2))]

history, floats, outs, arrays, lists, inputs, evals = [], [], [], [], [], [], []
for x, y in loader:
    out = model(x)
    loss = criterion(out, y)
    loss.backward()
    history.append(loss.item())
    floats.append(float(loss))
    outs.append(out.detach().cpu())
    arrays.append(out.detach().numpy())
    lists.append(out.tolist())
    inputs.append(x)
    per_step = []
    per_step.append(loss)
    with torch.no_grad():
        evals.append(model(x))

for x, y in loader:
    loss = criterion(model(x), y)
    loss = loss.item()
    history.append(loss)

# Several losses summed and backpropagated together.
losses = []
for head in range(3):
    losses.append(criterion(model(torch.randn(4, 8)), torch.randn(4, 2)))
total = torch.stack(losses).sum()
total.backward()


class Agent:
    def __init__(self):
        self.saved_log_probs = []

    def act(self, state):
        for _ in range(5):
            probs = policy(state).softmax(-1)
            m = Categorical(probs)
            action = m.sample()
            self.saved_log_probs.append(m.log_prob(action))

    def finish_episode(self, returns):
        policy_loss = []
        for log_prob, R in zip(self.saved_log_probs, returns):
            policy_loss.append(-log_prob * R)
        policy_loss = torch.cat(policy_loss).sum()
        policy_loss.backward()


@torch.no_grad()
def evaluate():
    outs = []
    for x, y in loader:
        outs.append(model(x))
    return outs


# Outside any loop.
single = [criterion(model(torch.randn(4, 8)), torch.randn(4, 2))]


def one_forward_one_backward(model, microbatches, warmup, backward_step):
    # A pipeline schedule: activations wait in a queue for their backward,
    # a few steps in flight.
    inputs, outputs = [], []
    for x in microbatches[:warmup]:
        inputs.append(x)
        outputs.append(model(x))
    for x in microbatches[warmup:]:
        out = model(x)
        inputs.append(x)
        outputs.append(out)
        backward_step(inputs.pop(0), outputs.pop(0))
