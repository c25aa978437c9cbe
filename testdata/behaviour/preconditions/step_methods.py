# vramlint-behaviour: the fixes apply (the test checks that they do)
# Totals and lists kept on an object by a training step called once a
# step: the fixes (.item() where the values are only read as numbers,
# .detach() where they are used as tensors) must leave every printed value
# as it was.
import torch
import torch.nn as nn

torch.manual_seed(0)
batches = [(torch.randn(2, 4), torch.randn(2, 1)) for _ in range(6)]


class Agent:
    def __init__(self):
        self.model = nn.Linear(4, 1)
        self.loss_function = nn.MSELoss()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.running_loss = 0

    def train(self, data, target):
        self.model.zero_grad()
        loss = self.loss_function(self.model(data), target)
        loss.backward()
        self.running_loss += loss
        self.optimizer.step()


class Recipe:
    def __init__(self, steps):
        self.model = nn.Linear(4, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.steps = steps
        self.step = 0
        self.window_loss = 0

    def train_step(self, x, y):
        loss = nn.functional.mse_loss(self.model(x), y) / self.steps
        self.window_loss = self.window_loss + loss
        loss.backward()
        if (self.step + 1) % self.steps == 0:
            self.optimizer.step()
            self.optimizer.zero_grad()
            print("recipe", self.step, round(self.window_loss.item(), 6))
            self.window_loss = 0
        self.step += 1


class Learner:
    def __init__(self):
        self.model = nn.Linear(4, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.losses = []
        self.outputs = []

    def learn(self, x, y):
        self.optimizer.zero_grad()
        loss = nn.functional.mse_loss(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        self.losses.append(loss)
        self.outputs.append(loss)

    def report(self):
        print("learner", [round(float(v), 6) for v in self.losses], round(torch.stack(self.outputs).mean().item(), 6))


agent, recipe, learner = Agent(), Recipe(3), Learner()
for x, y in batches:
    agent.train(x, y)
    recipe.train_step(x, y)
    learner.learn(x, y)
learner.report()
# .item() sums Python floats (double precision) where the tensor summed in
# single precision: the same total to about seven digits, one reason the
# fix is unsafe.
print("agent", round(float(agent.running_loss), 4))
print("weights", [round(v, 6) for v in agent.model.weight.flatten().tolist() + recipe.model.weight.flatten().tolist()])
