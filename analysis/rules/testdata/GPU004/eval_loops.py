import torch
import torch.nn as nn
from tqdm import tqdm

model = nn.Linear(8, 2)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_loader = [(torch.randn(4, 8), torch.randint(0, 2, (4,)))]
val_loader = train_loader
test_loader = train_loader

for epoch in range(2):
    model.train()
    for x, y in train_loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    for x, y in val_loader:  # want: GPU004 "eval\(\). does not disable gradient tracking"
        out = model(x)


def test(loader):
    model.eval()
    correct = 0
    for i, (x, y) in enumerate(loader):  # want: GPU004
        correct += (model(x).argmax(1) == y).sum().item()
    return correct


def predict_all():
    # No eval() here, but the loader's name says it is test data.
    return [model(x) for x, _ in test_loader]  # want: GPU004


def score():
    for x, y in tqdm(test_loader):  # want: GPU004
        model(x)


class Runner:
    def __init__(self):
        self.model = model

    def evaluate(self, data):
        self.model.eval()
        while True:  # want: GPU004
            x = next(data)
            self.model(x)



def predict_after_reenabling():
    torch.set_grad_enabled(False)
    torch.set_grad_enabled(True)
    model.eval()
    for x, y in val_loader:  # want: GPU004
        model(x)


def finetune_head(net):
    # Freezes its own network's parameters: not the model evaluated below.
    for p in net.parameters():
        p.requires_grad = False


model.eval()
for x, y in val_loader:  # want: GPU004
    model(x)


def evaluate_one(model, loader):
    for x, y in loader:  # want: GPU004
        model(x)


def evaluate_all(model, loaders):
    # A loop over datasets: the evaluation loop is evaluate_one's, reported
    # there.
    model.eval()
    for loader in loaders:
        evaluate_one(model, loader)


def validate_energies(net, val_loader, criterion, device):
    # The targets' forces are read, not the model's: nothing says the
    # model differentiates.
    net.eval()
    val_loss = 0.0
    for graph, target in val_loader:  # want: GPU004
        result = net(graph.to(device))
        val_loss += criterion(result["energy"], target).item()
        print(graph.forces.shape)


def evaluate_rl(policy, test_loader):
    # Advantages are not adversarial examples.
    policy.eval()
    for obs, ret in test_loader:  # want: GPU004
        adv_values = estimate_advantages(policy(obs), ret)


def evaluate_retry(model, val_loader):
    # A handler whose try does not turn autograd off.
    model.eval()
    try:
        with open("weights.pt", "rb") as fh:
            load_weights(model, fh)
    except RuntimeError:
        for x, y in val_loader:  # want: GPU004
            model(x)


class Learner:
    def predict_torch(self, x):
        return self.model(x)

    def predict_dl(self, dl):
        self.model.eval()
        for x, y in dl:  # want: GPU004
            z = self.predict_torch(x)


class Agent(torch.nn.Module):
    def forward(self, obs):
        return obs


def evaluate_agent(policy: Agent, val_loader):
    # Annotated with a model class: a model.
    for obs, y in val_loader:  # want: GPU004
        policy.forward(obs)


def validate_grad_chosen_elsewhere(val_loader):
    # A grad mode chosen for other code, not around the loop.
    model.eval()
    with torch.enable_grad():
        warm_up(model)
    for x, y in val_loader:  # want: GPU004
        model(x)


def evaluate_advantage(policy, test_loader):
    # `adv` alone names advantages, not adversarial examples.
    policy.eval()
    for obs, ret in test_loader:  # want: GPU004
        adv = compute_gae(policy(obs), ret)


class MembershipInference:
    def infer(self, test_loader):
        # ART: an attack's own model, a classifier, runs forward only.
        self.attack_model.eval()
        for x, _ in test_loader:  # want: GPU004
            outputs = self.attack_model(x)


def validate_gan(generator, discriminator, val_loader, adversarial_loss):
    # A GAN's adversarial loss is no attack.
    generator.eval()
    for z, real in val_loader:  # want: GPU004
        fake = generator(z)
        adversarial = adversarial_loss(discriminator(fake), real)
