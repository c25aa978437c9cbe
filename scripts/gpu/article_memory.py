#!/usr/bin/env python3
"""Measure the seed article's program on a real GPU, before and after vramlint's fixes.

The article (testdata/seed/dataloader_leak.py) says its training run's GPU
memory grows until it crashes. This script runs the program as written and as
`vramlint check --fix --unsafe-fixes` rewrites it, each in a fresh folder, and
samples the GPU's memory through NVML while it runs: the whole device and each
process of the program (the main process and its DataLoader workers). It needs
an NVIDIA GPU, PyTorch and nvidia-ml-py (pynvml); it is not part of CI, which
has no GPU. Without NVML it still runs the programs and reports their
outcomes, with no memory columns.

The program is scaled down by exact text substitution (fewer samples and
epochs; each substitution must match, or the script stops), the same for every
variant, and the fixed variant is made from the scaled program, so the only
difference between before and after is what vramlint wrote. Variants that
change one more thing (an environment variable, pin_memory) show which part of
the rule's explanation each failure comes from.

    python3 scripts/gpu/article_memory.py --vramlint ./vramlint --out results/

prints a table and writes results.json and each variant's output to --out.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

try:
    import pynvml
except ImportError:  # no NVIDIA driver here: outcomes only
    pynvml = None

MIB = 1024 * 1024


def substitute(text, old, new, count):
    """Replace old with new, insisting it occurs exactly count times."""
    found = text.count(old)
    if found != count:
        sys.exit(f"expected {count} occurrence(s) of {old!r} in the program, found {found}")
    return text.replace(old, new)


def text_of(value):
    return value.decode() if isinstance(value, bytes) else value


def scaled(source, samples, epochs):
    source = substitute(source, "range(10000)", f"range({samples})", 2)
    return substitute(source, "for epoch in range(5):", f"for epoch in range({epochs}):", 1)


def descendants(root):
    """The pids of root and every process below it, read from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                # The command name can hold spaces; the fields after ')' cannot.
                after_name = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(after_name[1]), []).append(int(entry))
    tree, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in tree:
            tree.add(pid)
            todo.extend(children.get(pid, []))
    return tree


class MemorySampler(threading.Thread):
    """Samples device memory and the program's processes' memory every interval."""

    def __init__(self, handle, root_pid, interval=0.02):
        super().__init__(daemon=True)
        self.handle, self.root_pid, self.interval = handle, root_pid, interval
        self.stop_event = threading.Event()
        self.device_used = []  # (seconds since start, bytes used on the device)
        self.process_peak = {}  # pid -> most bytes that pid held
        self.worker_pids = set()
        self.most_processes_at_once = 0
        self.lock = threading.Lock()
        self.started_at = time.monotonic()

    def used_now(self):
        return pynvml.nvmlDeviceGetMemoryInfo(self.handle).used

    def run(self):
        while not self.stop_event.is_set():
            used = self.used_now()
            tree = descendants(self.root_pid)
            try:
                running = pynvml.nvmlDeviceGetComputeRunningProcesses(self.handle)
            except pynvml.NVMLError:
                running = []
            on_device = 0
            with self.lock:
                self.device_used.append((time.monotonic() - self.started_at, used))
                for process in running:
                    if process.pid not in tree or process.usedGpuMemory is None:
                        continue
                    on_device += 1
                    if process.pid != self.root_pid:
                        self.worker_pids.add(process.pid)
                    self.process_peak[process.pid] = max(
                        self.process_peak.get(process.pid, 0), process.usedGpuMemory)
                self.most_processes_at_once = max(self.most_processes_at_once, on_device)
            self.stop_event.wait(self.interval)


def run_variant(name, program, env_extra, folder, timeout, handle):
    os.makedirs(folder)
    path = os.path.join(folder, "program.py")
    with open(path, "w") as out:
        out.write(program)
    env = dict(os.environ, PYTHONUNBUFFERED="1", **env_extra)
    result = {"variant": name, "env": env_extra}
    baseline = pynvml.nvmlDeviceGetMemoryInfo(handle).used if handle else None
    started = time.monotonic()
    # A session of its own, so that a timeout ends the DataLoader workers too.
    process = subprocess.Popen(
        [sys.executable, "program.py"], cwd=folder, env=env, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    sampler = MemorySampler(handle, process.pid) if handle else None
    if sampler:
        sampler.start()
    lines, epoch_ends, batches = [], [], 0
    first_batch_device = None

    def read_output():
        nonlocal batches, first_batch_device
        for line in process.stdout:
            lines.append(line)
            if " processed." in line:
                batches += 1
            elif line.startswith("Batch ") and " on " in line and first_batch_device is None:
                first_batch_device = line.split(" on ", 1)[1].split(",")[0]
            elif "finished ---" in line:
                used = sampler.used_now() if sampler else None
                epoch_ends.append({"seconds": round(time.monotonic() - started, 2),
                                   "device_used_mib": used and round((used - baseline) / MIB)})

    reader = threading.Thread(target=read_output, daemon=True)
    reader.start()
    try:
        process.wait(timeout=timeout)
        result["outcome"] = "exit %d" % process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        result["outcome"] = f"killed after {timeout} s"
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # workers left behind
        except ProcessLookupError:
            pass
    reader.join(timeout=5)
    result["seconds"] = round(time.monotonic() - started, 2)
    result["batches_processed"] = batches
    result["first_batch_on"] = first_batch_device
    result["epochs_finished"] = epoch_ends
    errors = [line.rstrip() for line in lines if "Error" in line or "error" in line]
    result["last_error_line"] = errors[-1] if errors else None
    if sampler:
        sampler.stop_event.set()
        sampler.join()
        time.sleep(0.5)  # let the driver release what the program held
        with sampler.lock:
            peak = max((used for _, used in sampler.device_used), default=baseline)
            result["device_peak_mib"] = round((peak - baseline) / MIB)
            result["main_process_peak_mib"] = round(
                sampler.process_peak.get(process.pid, 0) / MIB)
            result["worker_processes_on_gpu"] = len(sampler.worker_pids)
            result["workers_peak_total_mib"] = round(
                sum(sampler.process_peak[pid] for pid in sampler.worker_pids) / MIB)
            result["most_processes_on_gpu_at_once"] = sampler.most_processes_at_once
            result["samples"] = len(sampler.device_used)
        result["device_after_exit_mib"] = round(
            (pynvml.nvmlDeviceGetMemoryInfo(handle).used - baseline) / MIB)
    with open(os.path.join(folder, "output.txt"), "w") as out:
        out.writelines(lines)
    shutil.rmtree(os.path.join(folder, "dummy_data"), ignore_errors=True)
    return result


def fixed_by_vramlint(vramlint, source, folder):
    """The program as `vramlint check --fix --unsafe-fixes` rewrites it."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "fixed.py")
    with open(path, "w") as out:
        out.write(source)
    run = subprocess.run([vramlint, "check", "--fix", "--unsafe-fixes", path],
                         capture_output=True, text=True)
    print(run.stdout.strip(), run.stderr.strip())
    if run.returncode not in (0, 1):
        sys.exit(f"vramlint failed with exit code {run.returncode}")
    with open(path) as fixed:
        text = fixed.read()
    if text == source:
        sys.exit("vramlint changed nothing")
    return text


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--program", default=os.path.join(here, "../../testdata/seed/dataloader_leak.py"))
    parser.add_argument("--vramlint", default="vramlint")
    parser.add_argument("--out", default="article-memory")
    parser.add_argument("--samples", type=int, default=1024, help="the article writes 10000")
    parser.add_argument("--epochs", type=int, default=3, help="the article runs 5")
    parser.add_argument("--timeout", type=int, default=60, help="seconds per variant")
    args = parser.parse_args()

    with open(args.program) as program:
        before = scaled(program.read(), args.samples, args.epochs)
    os.makedirs(args.out, exist_ok=True)
    after = fixed_by_vramlint(args.vramlint, before, os.path.join(args.out, "fix"))
    nvml_check = {"PYTORCH_NVML_BASED_CUDA_CHECK": "1"}
    unpinned = substitute(before, "num_workers=4, pin_memory=True", "num_workers=4, pin_memory=False", 1)
    variants = [
        ("before: the article's program", before, {}),
        ("before, is_available() through NVML", before, nvml_check),
        ("before, NVML check, pin_memory=False", unpinned, nvml_check),
        ("after: vramlint --fix --unsafe-fixes", after, {}),
    ]

    handle, facts = None, {"python": sys.version.split()[0]}
    if pynvml is not None:
        try:
            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            # Older nvidia-ml-py versions answer bytes.
            facts["gpu"] = text_of(pynvml.nvmlDeviceGetName(handle))
            facts["driver"] = text_of(pynvml.nvmlSystemGetDriverVersion())
        except pynvml.NVMLError as error:
            facts["nvml"] = str(error)
    torch_version = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.__version__)"],
        capture_output=True, text=True).stdout.strip()
    facts.update(torch=torch_version, samples=args.samples, epochs=args.epochs)
    print(json.dumps(facts))

    results = []
    for index, (name, source, env) in enumerate(variants):
        folder = os.path.join(args.out, f"variant{index}")
        shutil.rmtree(folder, ignore_errors=True)
        result = run_variant(name, source, env, folder, args.timeout, handle)
        print(json.dumps(result), flush=True)
        results.append(result)

    with open(os.path.join(args.out, "results.json"), "w") as out:
        json.dump({"facts": facts, "results": results}, out, indent=2)
    header = ["variant", "outcome", "batches", "first batch on", "device peak MiB",
              "main MiB", "workers on GPU", "workers MiB", "after exit MiB"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in results:
        row = [r["variant"], r["outcome"], r["batches_processed"], r["first_batch_on"],
               r.get("device_peak_mib"), r.get("main_process_peak_mib"),
               r.get("worker_processes_on_gpu"), r.get("workers_peak_total_mib"),
               r.get("device_after_exit_mib")]
        print("| " + " | ".join(str(cell) for cell in row) + " |")
    for r in results:
        print(r["variant"], "epoch ends:", r["epochs_finished"], "last error:", r["last_error_line"])


if __name__ == "__main__":
    main()
