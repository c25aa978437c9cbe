import contextlib

import torch
import torch.nn as nn

model = nn.Linear(8, 2)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
val_loader = [(torch.randn(4, 8), torch.randint(0, 2, (4,)))]

model.eval()
with torch.no_grad():
    for x, y in val_loader:
        model(x)

with torch.inference_mode():
    for x, y in val_loader:
        model(x)

with torch.set_grad_enabled(False):
    for x, y in val_loader:
        model(x)


@torch.no_grad()
def validate():
    model.eval()
    for x, y in val_loader:
        model(x)


@torch.inference_mode()
def predict():
    for x, y in val_loader:
        model(x)


def evaluate_inner():
    model.eval()
    for x, y in val_loader:
        model(x)


def run_eval():
    with torch.no_grad():
        evaluate_inner()


# eval() to freeze batch norm while training: there is a backward.
model.eval()
for x, y in val_loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()

# Saliency maps need input gradients.
model.eval()
for x, y in val_loader:
    x.requires_grad_()
    model(x).sum()

# Back in training mode.
model.eval()
model.train()
for x, y in [(torch.randn(4, 8), 0)]:
    model(x)


class Lit(nn.Module):
    def validation_step(self, batch, idx):
        for x in batch:
            self.model(x)


def predict_without_grad():
    torch.set_grad_enabled(False)
    model.eval()
    for x, y in val_loader:
        model(x)
    torch.set_grad_enabled(True)


class Tagger(nn.Module):
    # A loop over the tag columns in forward (eval_order is not a loader):
    # one step of whoever calls the module.
    def __init__(self):
        super().__init__()
        self.eval_order = ["upos", "xpos"]
        self.heads = nn.ModuleDict({name: nn.Linear(8, 4) for name in self.eval_order})
        self.drop = nn.Dropout(0.1)

    def forward(self, h):
        outs = {}
        for name in self.eval_order:
            outs[name] = self.heads[name](self.drop(h))
        return outs


class RelativeVolume(nn.Module):
    def forward(self, a, b):
        return (a - b).abs().mean()


def evaluate_reconstruction(model, val_loader):
    # The model runs under no_grad inside the loop; the metric module runs
    # outside it on purpose, on outputs without history.
    rvm = RelativeVolume()
    model.eval()
    for x in val_loader:
        with torch.no_grad():
            y_pred = model(x)
        rvm(y_pred.cpu(), x.cpu())


class Trainer:
    def __init__(self, model):
        self.model = model

    def eval_model(self, data):
        # A method named like a model: calling it runs the method, whose
        # body decides (here it runs the model under no_grad).
        with torch.no_grad():
            return [self.model(x) for x in data]

    def evaluate_during_training(self, eval_sets):
        self.model.eval()
        results = {}
        for name, data in eval_sets:
            results[name] = self.eval_model(data)
        return results


@contextlib.contextmanager
def preserve_grad_state(model):
    backup = {p: p.requires_grad for p in model.parameters()}
    try:
        for p in model.parameters():
            p.requires_grad = False
        yield
    finally:
        for p, requires_grad in backup.items():
            p.requires_grad = requires_grad


def evaluate_forces(model, val_loader):
    # The weights are frozen around the loop: what autograd still does is
    # asked for (forces are gradients of the energy by the positions).
    model.eval()
    with preserve_grad_state(model):
        for batch in val_loader:
            model(batch, compute_force=True)


def jacobian_features(model, x):
    params = dict(model.named_parameters())
    return torch.func.jacrev(lambda p: torch.func.functional_call(model, p, (x,)))(params)


def fit_laplace(model, train_loader):
    # Curvature from Jacobians after eval(): the forward passes need
    # autograd.
    model.eval()
    for x, y in train_loader:
        jacobian_features(model, x)
        model(x)


def attack_stability(model, adversary, cln_data, true_label, situations):
    # An adversarial attack differentiates the model inside perturb.
    model.eval()
    for offset, minus_max in situations:
        model.offset, model.minus_max = offset, minus_max
        adv = adversary.perturb(cln_data, true_label)
        model(adv)


class ForceField(nn.Module):
    def __init__(self):
        super().__init__()
        self.energy = nn.Linear(3, 1)

    def forward(self, positions):
        positions.requires_grad_(True)
        energy = self.energy(positions).sum()
        forces = -torch.autograd.grad(energy, positions, create_graph=self.training)[0]
        return energy, forces


def test_forces(loader):
    # The model's forward takes the gradient of its energy: it needs
    # autograd after eval() too.
    field = ForceField()
    field.eval()
    for positions in loader:
        energy, forces = field(positions)


class PoisoningAttack:
    def poison(self, classifier, loader):
        def weight_grad(x, y):
            loss = criterion(classifier(x), y)
            grads = torch.autograd.grad(loss, list(classifier.parameters()), create_graph=True)
            return torch.cat([g.flatten() for g in grads])

        class Backdoor(nn.Module):
            def forward(self, x, y):
                return weight_grad(x, y).norm()

        self.backdoor_model = Backdoor()
        self.backdoor_model.eval()
        for x, y in loader:
            # Gradient matching: the forward differentiates the classifier.
            self.backdoor_model(x, y)


def validate_potential(net, val_loader, criterion, device):
    # An interatomic potential (another file's class): its forces and
    # stress are gradients of its energy, taken in its forward.
    net.eval()
    val_loss = 0.0
    for graph, target in val_loader:
        result = net(graph.to(device))
        val_loss += criterion(result["out"], target).item()
        val_loss += criterion(result["grad"], graph.forces).item()


class EquivariantReLU(nn.Module):
    def forward(self, x):
        return torch.relu(x)

    def check_equivariance(self, group):
        # A test over the elements of a symmetry group, not over data.
        x = torch.randn(3, 8)
        for el in group.testing_elements:
            assert torch.allclose(self(x * el), self(x) * el)
