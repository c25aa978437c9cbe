# vramlint-behaviour: the fixes apply (the test checks that they do)
# Methods that keep the loss they are given, on a recorder and on the
# agent: the fix (.detach() at the call) must leave every printed value
# as it was, the stored values used as tensors included.
import torch
import torch.nn as nn

torch.manual_seed(0)
batches = [(torch.randn(2, 4), torch.randn(2, 1)) for _ in range(6)]


class Recorder:
    def __init__(self):
        self.progress = {"step": [], "loss": []}

    def record(self, step, loss):
        self.progress["step"].append(step)
        self.progress["loss"].append(loss)


class Agent:
    def __init__(self):
        self.model = nn.Linear(4, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.recorder = Recorder()
        self.history = []

    def save_loss(self, loss):
        self.history.append(loss)

    def learn(self):
        for step, (x, y) in enumerate(batches):
            loss = nn.functional.mse_loss(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.save_loss(loss)
            self.recorder.record(step, loss)


agent = Agent()
agent.learn()
print("history", round(torch.stack(agent.history).mean().item(), 6))
print("progress", agent.recorder.progress["step"], [round(float(v), 6) for v in agent.recorder.progress["loss"]])
print("weights", [round(v, 6) for v in agent.model.weight.flatten().tolist()])
