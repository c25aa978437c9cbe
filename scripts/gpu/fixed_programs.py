#!/usr/bin/env python3
"""Run the behaviour tests' GPU programs on a real GPU, before and after vramlint's fixes.

CI runs testdata/behaviour/programs, examples/train.py and the projects of
testdata/projects (flat, package) under a shim that turns CUDA calls into
recorded no-ops (testdata/behaviour/sitecustomize.py), and checks that the
fixed programs print what the originals print. This script runs the same
programs with real CUDA: each as written and as `vramlint check --fix
--unsafe-fixes` rewrites it, and writes what each printed and how it ended.
Without a GPU (or with --shim) it runs them under the shim instead, so that
the two runs' outputs can be compared:

    python3 scripts/gpu/fixed_programs.py --vramlint ./vramlint --out gpu.json
    python3 scripts/gpu/fixed_programs.py --vramlint ./vramlint --out cpu.json --shim
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def programs():
    """(name, folder to copy, entry file) of every program the check runs."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "testdata", "behaviour", "programs", "*.py"))):
        out.append((os.path.basename(path), path, None))
    out.append(("examples/train.py", os.path.join(ROOT, "examples", "train.py"), None))
    for project, entry in (("flat", "train.py"), ("package", "run.py")):
        out.append((f"projects/{project}", os.path.join(ROOT, "testdata", "projects", project), entry))
    return out


def run(python, entry, env, timeout):
    try:
        done = subprocess.run([python, os.path.basename(entry)], cwd=os.path.dirname(entry), env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"outcome": f"killed after {timeout} s", "stdout": "", "error": None}
    errors = [line for line in done.stderr.splitlines() if "Error" in line]
    return {"outcome": f"exit {done.returncode}", "stdout": done.stdout,
            "error": errors[-1] if errors else None}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vramlint", default="vramlint")
    parser.add_argument("--out", default="fixed-programs.json")
    parser.add_argument("--shim", action="store_true", help="run under the CUDA shim, as CI does")
    parser.add_argument("--timeout", type=int, default=120)
    parser.add_argument("--only", action="append", help="run only the programs whose name holds this (repeatable)")
    args = parser.parse_args()

    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1")
    if args.shim:
        env["PYTHONPATH"] = os.path.join(ROOT, "testdata", "behaviour")
        env["VRAMLINT_SHIM_LOG"] = os.devnull
    results = []
    with tempfile.TemporaryDirectory() as work:
        for name, source, entry in programs():
            if args.only and not any(part in name for part in args.only):
                continue
            copies = {}
            for version in ("before", "after"):
                folder = os.path.join(work, name.replace("/", "_"), version)
                if entry:
                    shutil.copytree(source, folder)
                    copies[version] = os.path.join(folder, entry)
                else:
                    os.makedirs(folder)
                    copies[version] = shutil.copy(source, folder)
            fixed_path = os.path.dirname(copies["after"]) if entry else copies["after"]
            fix = subprocess.run([args.vramlint, "check", "--fix", "--unsafe-fixes", fixed_path],
                                 capture_output=True, text=True)
            result = {"program": name, "fix": fix.stdout.strip().splitlines()[-1:]}
            for version, path in copies.items():
                result[version] = run(sys.executable, path, env, args.timeout)
            print(json.dumps({"program": name, "before": result["before"]["outcome"],
                              "before_error": result["before"]["error"],
                              "after": result["after"]["outcome"], "after_error": result["after"]["error"]}),
                  flush=True)
            results.append(result)
    with open(args.out, "w") as out:
        json.dump(results, out, indent=2)
    print("| program | as written | after --fix --unsafe-fixes |")
    print("|---|---|---|")
    for r in results:
        before = r["before"]["outcome"] + (f" ({r['before']['error']})" if r["before"]["error"] else "")
        after = r["after"]["outcome"] + (f" ({r['after']['error']})" if r["after"]["error"] else "")
        print(f"| {r['program']} | {before} | {after} |")


if __name__ == "__main__":
    main()
