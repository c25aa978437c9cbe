# Evaluation loops that need autograd, or whose author chose its mode:
# adversarial evaluation, a grad mode set on purpose, a fallback after a
# no-grad attempt, a model exported to another runtime, and a wrapper
# class whose name says model but which is not one.
from abc import ABC

import torch
import torch.nn.functional as F


class Evaluator:
    def adv_data(self, data, target, ep=0.3):
        adversary = PGD(self.model)
        data_adv = adversary.generate(data, target, epsilon=ep)
        return data_adv, self.model(data_adv)

    def test(self, model, device, test_loader):
        # deeprobust: the clean and the adversarial accuracy in one loop.
        model.eval()
        for data, target in test_loader:
            output = model(data)
            data_adv, output_adv = self.adv_data(data, target)
            pred_adv = output_adv.argmax(dim=1)


def run_attack(model, attackmethod, test_loader):
    model.eval()
    for data, target in test_loader:
        adv_example = attackmethod.generate(data, target)
        output = model(adv_example)


def evaluate_robust(model, attacker, test_loader):
    model.eval()
    for x, y in test_loader:
        model(attacker.generate(x, y))


def evaluate_perturbed(model, perturber, test_loader):
    model.eval()
    for images, labels in test_loader:
        images_adv = perturber.run(model, images, labels)
        model(images_adv)


def evaluate_pgd(model, test_loader):
    model.eval()
    for x, y in test_loader:
        model(x)
        model(pgd_attack(model, x, y))


class Trainer:
    def validate(self):
        # neuromancer: models that take gradients at inference say so.
        with torch.set_grad_enabled(self.model.grad_inference):
            self.model.eval()
            for batch in self.dev_data:
                self.model(batch)

    @torch.enable_grad()
    def evaluate_saliency(self, val_loader):
        self.model.eval()
        for x, y in val_loader:
            self.model(x)


def encode_eval(model, eval_loader):
    # pythae's samplers: no_grad first; the fallback runs with autograd
    # because the model's forward needs it, and detaches.
    z = []
    model.eval()
    try:
        with torch.no_grad():
            for inputs in eval_loader:
                z.append(model(inputs).z)
    except RuntimeError:
        for inputs in eval_loader:
            z.append(model(inputs).z.detach())
    return z


class Learner:
    def predict(self, x):
        with torch.inference_mode():
            return self.model(x)

    def predict_onnx(self, x):
        return self.model(x)  # an ONNX Runtime session, not a torch model

    def predict_dl(self, dl):
        # rastervision: the ONNX branch's model records no graph.
        self.model.eval()
        for x, y in dl:
            if self.onnx_mode:
                z = self.predict_onnx(x)
            else:
                z = self.predict(x)


class Policy(ABC):
    # DI-engine: a policy wraps a model; its forward turns autograd off.
    def forward(self, data):
        with torch.no_grad():
            return self._model(data)


def metric_evaluator(policy: Policy, dataset):
    dataloader = DataLoader(dataset)

    def _evaluate(ctx):
        for inputs, label in dataloader:
            policy.forward(inputs)

    return _evaluate


def validate_policy(policy: Policy, val_loader):
    for inputs, label in val_loader:
        policy.forward(inputs)


class Runner(object):
    def forward(self, data):
        with torch.no_grad():
            return self.model(data)


def validate_runner(policy: Runner, val_loader):
    for inputs, label in val_loader:
        policy.forward(inputs)
