#!/usr/bin/env python3
"""Measure on a real GPU what docs/rules/GPU00*.md say each pattern costs.

Each case runs the pattern a rule reports and the code its fix writes, side by
side, on the same model and data, and prints what the rule's explanation makes
a claim about: GPU memory kept per step (gpu.memory_allocated after
each step, as it grows past a warm-up), the peak of a forward pass, or
milliseconds per step. It needs a CUDA GPU; it is not part of CI, which has
none. Without one it runs on the CPU with the GPU memory columns at zero, which
only checks that the script runs (the host rows then read the CPU allocator's
growth, activations included: not the graph's nodes).

    python3 scripts/gpu/rule_claims.py [--steps 200] [--only TEXT ...]

--only measures only the rows whose pattern contains TEXT.
"""

import argparse
import gc
import json
import os
import time

import torch
from torch import nn

MIB = 1024 * 1024
WARMUP = 10
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class NoGPU:
    """Stands in for torch.cuda's memory functions on a machine without a GPU."""

    @staticmethod
    def synchronize():
        pass

    memory_allocated = max_memory_allocated = staticmethod(lambda: 0)
    reset_peak_memory_stats = empty_cache = synchronize
    get_device_name = staticmethod(lambda: "none (CPU dry run)")


gpu = torch.cuda if DEVICE == "cuda" else NoGPU


def make_model(width=4096, depth=4):
    if DEVICE == "cpu":
        width //= 32  # a dry run checks the script, not the numbers
    layers = [nn.Linear(1024, width), nn.ReLU()]
    for _ in range(depth - 2):
        layers += [nn.Linear(width, width), nn.ReLU()]
    layers.append(nn.Linear(width, 10))
    torch.manual_seed(0)
    return nn.Sequential(*layers).to(DEVICE)


def batches(count, size=256):
    generator = torch.Generator(device=DEVICE).manual_seed(1)
    return [(torch.randn(size, 1024, device=DEVICE, generator=generator),
             torch.randint(0, 10, (size,), device=DEVICE, generator=generator))
            for _ in range(count)]


def host_memory():
    """The process's resident memory, after Python has freed what it can."""
    gc.collect()
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def kept_per_step(step, steps, memory=None):
    """Bytes of memory (the GPU's, or what memory() reads) that stay per step, after a warm-up."""
    memory = memory or gpu.memory_allocated
    gpu.synchronize()
    for index in range(WARMUP):
        step(index)
    before = memory()
    for index in range(WARMUP, steps):
        step(index)
    return (memory() - before) / (steps - WARMUP)


class Transformer(nn.Module):
    """A GPT-2-small-sized encoder (12 layers, 768 wide) over token ids: many
    more autograd nodes a step than the MLP, for what a kept total costs in
    host memory."""

    def __init__(self, vocab=1000, width=768, layers=12):
        super().__init__()
        if DEVICE == "cpu":
            width, layers = 64, 2  # a dry run checks the script, not the numbers
        self.embed = nn.Embedding(vocab, width)
        layer = nn.TransformerEncoderLayer(width, 12 if width % 12 == 0 else 4, 4 * width, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens))).flatten(0, 1)


def make_transformer():
    torch.manual_seed(0)
    return Transformer().to(DEVICE)


def token_batches(count, size=8, length=128, vocab=1000):
    if DEVICE == "cpu":
        length = 16  # a dry run checks the script, not the numbers
    generator = torch.Generator(device=DEVICE).manual_seed(1)
    return [(torch.randint(0, vocab, (size, length), device=DEVICE, generator=generator),
             torch.randint(0, vocab, (size * length,), device=DEVICE, generator=generator))
            for _ in range(count)]


def autograd_nodes(loss):
    """How many autograd nodes the graph behind loss has."""
    seen, stack = set(), [loss.grad_fn]
    while stack:
        node = stack.pop()
        if node is not None and node not in seen:
            seen.add(node)
            stack.extend(parent for parent, _ in node.next_functions)
    return len(seen)


def training_case(store, steps, data, memory=None, model_factory=make_model, nodes=None):
    """A training loop that calls store(loss, kept) after backward; returns bytes kept per step.
    nodes, a list, gets the number of autograd nodes of the first step's graph."""
    model = model_factory()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()
    kept = {"list": [], "total": 0.0}

    def step(index):
        x, y = data[index % len(data)]
        loss = criterion(model(x), y)
        if nodes is not None and not nodes:
            nodes.append(autograd_nodes(loss))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        store(loss, kept)

    per_step = kept_per_step(step, steps, memory)
    del model, optimizer, kept
    gpu.empty_cache()
    return per_step


def evaluation_case(store, steps, data):
    """An evaluation loop (model.eval(), no backward) that stores each step's output or loss."""
    model = make_model().eval()
    criterion = nn.CrossEntropyLoss()
    kept = {"list": [], "total": 0.0}

    def step(index):
        x, y = data[index % len(data)]
        output = model(x)
        store(output, criterion(output, y), kept)

    per_step = kept_per_step(step, steps)
    del model, kept
    gpu.empty_cache()
    return per_step


def forward_peak(no_grad, data):
    """Peak memory of one evaluation forward pass, above what was allocated before it."""
    model = make_model(width=8192, depth=8).eval()
    x, _ = data[0]
    x = x.repeat(16, 1)  # a large batch, so activations dominate the weights
    gpu.synchronize()
    gpu.reset_peak_memory_stats()
    before = gpu.memory_allocated()
    with torch.set_grad_enabled(not no_grad):
        output = model(x)
    gpu.synchronize()
    peak = gpu.max_memory_allocated() - before
    del model, output
    gpu.empty_cache()
    return peak


def milliseconds_per_step(empty_cache_each_step, steps, data):
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()
    for index in range(WARMUP):
        loss = criterion(model(data[index % len(data)][0]), data[index % len(data)][1])
        loss.backward()
    gpu.synchronize()
    started = time.perf_counter()
    for index in range(steps):
        x, y = data[index % len(data)]
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        del loss
        if empty_cache_each_step:
            gpu.empty_cache()
    gpu.synchronize()
    elapsed = time.perf_counter() - started
    del model, optimizer
    gpu.empty_cache()
    return elapsed * 1000 / steps


def append(kept, value):
    kept["list"].append(value)


def add(kept, value):
    kept["total"] += value


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--only", action="append", default=[],
                        help="measure only the rows whose pattern contains this (repeatable)")
    args = parser.parse_args()
    steps = args.steps
    data = batches(16)
    rows = []

    def row(rule, pattern, measure, reported, fixed, unit):
        """Measures and prints a row; reported and fixed are called only for the rows measured."""
        if args.only and not any(text in pattern for text in args.only):
            return
        rows.append({"rule": rule, "pattern": pattern, "measure": measure,
                     "reported": reported(), "fixed": fixed(), "unit": unit})
        print(json.dumps(rows[-1]), flush=True)

    kib = 1024
    row("GPU002", "eval outputs kept: preds.append(model(x)) / .detach()", "kept per step",
        lambda: evaluation_case(lambda out, loss, kept: append(kept, out), steps, data) / kib,
        lambda: evaluation_case(lambda out, loss, kept: append(kept, out.detach()), steps, data) / kib,
        "KiB")
    row("GPU002", "loss kept after backward: losses.append(loss) / loss.item()", "kept per step",
        lambda: training_case(lambda loss, kept: append(kept, loss), steps, data),
        lambda: training_case(lambda loss, kept: append(kept, loss.item()), steps, data),
        "bytes")
    row("GPU003", "total += loss after backward / loss.item()", "kept per step",
        lambda: training_case(lambda loss, kept: add(kept, loss), steps, data),
        lambda: training_case(lambda loss, kept: add(kept, loss.item()), steps, data),
        "bytes")
    row("GPU003", "total += loss after backward / loss.item()", "host memory kept per step",
        lambda: training_case(lambda loss, kept: add(kept, loss), steps * 5, data, host_memory),
        lambda: training_case(lambda loss, kept: add(kept, loss.item()), steps * 5, data, host_memory),
        "bytes")
    # The same on a model with many more operations a step: what the total
    # keeps is each step's graph nodes, so it grows with the model.
    tokens, nodes = token_batches(4), []
    row("GPU003", "total += loss after backward, 12-layer transformer / loss.item()", "host memory kept per step",
        lambda: training_case(lambda loss, kept: add(kept, loss), steps * 5, tokens, host_memory,
                              make_transformer, nodes),
        lambda: training_case(lambda loss, kept: add(kept, loss.item()), steps * 5, tokens, host_memory,
                              make_transformer),
        "bytes")
    if nodes:
        print(json.dumps({"transformer autograd nodes a step": nodes[0]}), flush=True)
    row("GPU003", "eval total += loss, autograd on / loss.item()", "kept per step",
        lambda: evaluation_case(lambda out, loss, kept: add(kept, loss), steps, data) / kib,
        lambda: evaluation_case(lambda out, loss, kept: add(kept, loss.item()), steps, data) / kib,
        "KiB")
    row("GPU004", "eval forward, autograd on / torch.no_grad()", "peak above weights",
        lambda: forward_peak(False, data) / MIB, lambda: forward_peak(True, data) / MIB, "MiB")
    row("GPU005", "empty_cache() every step / once after the loop", "time per step",
        lambda: milliseconds_per_step(True, steps, data), lambda: milliseconds_per_step(False, steps, data), "ms")

    print(json.dumps({"torch": torch.__version__, "gpu": gpu.get_device_name(), "steps": steps}))
    print("| rule | pattern (reported / fixed) | measure | reported | fixed |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['rule']} | {r['pattern']} | {r['measure']} | "
              f"{r['reported']:.1f} {r['unit']} | {r['fixed']:.1f} {r['unit']} |")


if __name__ == "__main__":
    main()
