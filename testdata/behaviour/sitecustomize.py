"""Test shim for the behaviour tests: turns CUDA calls into recorded no-ops.

Programs written for a GPU then run on a CPU-only PyTorch, and the log says
which process moved tensors to the device (a DataLoader worker or the main
process), with which non_blocking flag, and how often empty_cache() ran.
Tensors moved in the main process are marked, and a model moved to the
device that is called with an unmarked tensor logs "cpu_input": on a GPU
that call would fail with tensors on two devices.
Python imports this module at start-up when its folder is on PYTHONPATH;
VRAMLINT_SHIM_LOG names the log (JSON lines).
"""
import json
import os

import torch

_LOG = os.environ["VRAMLINT_SHIM_LOG"]
# The first process to import the shim is the main one; workers inherit
# the variable (fork) or the environment (spawn).
os.environ.setdefault("VRAMLINT_SHIM_MAIN_PID", str(os.getpid()))
_MAIN_PID = int(os.environ["VRAMLINT_SHIM_MAIN_PID"])


def _record(kind, **fields):
    fields.update(kind=kind, pid=os.getpid(), worker=os.getpid() != _MAIN_PID)
    with open(_LOG, "a") as log:
        log.write(json.dumps(fields) + "\n")


def _is_cuda(device):
    if isinstance(device, torch.device):
        return device.type == "cuda"
    if isinstance(device, str):
        return device.startswith("cuda")
    return isinstance(device, int) and not isinstance(device, bool)


def _mark(tensor):
    tensor._vramlint_on_device = True
    return tensor


def _cuda(self, device=None, non_blocking=False, memory_format=None):
    _record("cuda", non_blocking=bool(non_blocking))
    return _mark(self)


_original_to = torch.Tensor.to


def _to(self, *args, **kwargs):
    args = list(args)
    device = kwargs.get("device")
    if args and _is_cuda(args[0]):
        device = args.pop(0)
    if not _is_cuda(device):
        return _original_to(self, *args, **kwargs)
    kwargs.pop("device", None)
    non_blocking = kwargs.pop("non_blocking", False)
    if len(args) >= 2:  # to(device, dtype, non_blocking)
        non_blocking = args.pop(1)
    _record("to_cuda", non_blocking=bool(non_blocking))
    return _mark(_original_to(self, *args, **kwargs) if args or kwargs else self)


def _factory(original):
    def make(*args, **kwargs):
        if _is_cuda(kwargs.get("device")):
            _record("factory_cuda", non_blocking=False)
            kwargs.pop("device")
        return original(*args, **kwargs)
    return make


for _name in ("tensor", "zeros", "ones", "randn", "rand", "arange", "full", "empty"):
    setattr(torch, _name, _factory(getattr(torch, _name)))

torch.Tensor.cuda = _cuda
torch.Tensor.to = _to
torch.Tensor.pin_memory = lambda self, *args, **kwargs: self
torch.cuda.is_available = lambda: True
torch.cuda.current_device = lambda: 0
torch.cuda.set_device = lambda device: None
torch.cuda.synchronize = lambda device=None: None
torch.cuda.empty_cache = lambda: _record("empty_cache")


# Models: .to(cuda)/.cuda() mark the module (its parameters stay where they
# are); a call of a marked module from outside any module checks its inputs.
_original_module_to = torch.nn.Module.to
_module_depth = [0]


def _module_to(self, *args, **kwargs):
    device = kwargs.get("device", args[0] if args else None)
    if _is_cuda(device):
        self._vramlint_on_device = True
        args = args[1:] if args and args[0] is device else args
        kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        return _original_module_to(self, *args, **kwargs) if args or kwargs else self
    return _original_module_to(self, *args, **kwargs)


def _module_cuda(self, device=None):
    self._vramlint_on_device = True
    return self


_original_call = torch.nn.Module.__call__


def _module_call(self, *args, **kwargs):
    if _module_depth[0] == 0 and getattr(self, "_vramlint_on_device", False):
        for value in list(args) + list(kwargs.values()):
            if isinstance(value, torch.Tensor) and not getattr(value, "_vramlint_on_device", False):
                _record("cpu_input")
    _module_depth[0] += 1
    try:
        return _original_call(self, *args, **kwargs)
    finally:
        _module_depth[0] -= 1


torch.nn.Module.to = _module_to
torch.nn.Module.cuda = _module_cuda
torch.nn.Module.__call__ = _module_call
