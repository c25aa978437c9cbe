import torch

from pkg import _metrics as metrics
from pkg._metrics import compute_elbo, compute_error


class VAEMixin:
    @torch.inference_mode()
    def get_elbo(self, loader):
        return -compute_elbo(self.module, loader)

    @torch.inference_mode()
    def get_error(self, loader):
        return compute_error(self.module, loader)

    def validate(self, loader):
        with torch.no_grad():
            return metrics.evaluate_loss(self.module, loader), metrics.evaluate_accuracy(self.module, loader)


def fit_report(module, loader):
    return compute_error(module, loader)


@torch.no_grad()
def kl_of(module, loader):
    return metrics.total_kl(module, loader)
