#!/usr/bin/env python3
"""The ecosystem check: vramlint on pinned releases of real PyTorch projects.

Downloads each project in projects.txt from PyPI into a cache (kept between
runs), runs `vramlint check` on it, and applies every fix vramlint offers
(`--fix --unsafe-fixes --diff`, nothing is written). Compares with
baseline.tsv, where every finding and every fix's diff is reviewed:

    finding <TAB> project <TAB> path:line:column <TAB> code <TAB> true|false <TAB> why
    fix     <TAB> project <TAB> path <TAB> sha256 of the file's diff <TAB> right|wrong <TAB> why
    safe-fix  (the same for the diff of `--fix` alone)

It prints the findings per 10,000 lines, new and vanished findings, and
fix diffs that changed. It fails (exit 1) on a finding or a fix diff that
is not in the baseline, and on a baseline entry reviewed as false or wrong:
a false finding is a bug to fix, not an entry to keep.

    python3 scripts/ecosystem/run.py [--vramlint BIN] [--cache DIR] [--write-baseline]

--write-baseline rewrites baseline.tsv with the current findings, keeping
the verdicts already there and marking new entries "unreviewed" (which
fails until someone reviews them).
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def read_projects():
    out = []
    for line in (HERE / "projects.txt").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            out.append((name, version))
    return out


def fetch(name, version, cache):
    """Returns the folder holding the project's extracted files."""
    dest = cache / "src" / f"{name}-{version}"
    if (dest / ".complete").exists():
        return dest
    dl = cache / "dl" / f"{name}-{version}"
    dl.mkdir(parents=True, exist_ok=True)
    if not any(dl.iterdir()):
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(dl), f"{name}=={version}"],
            check=True,
        )
    archive = next(dl.iterdir())
    dest.mkdir(parents=True, exist_ok=True)
    if archive.name.endswith(".whl") or archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            z.extractall(dest)
    else:
        with tarfile.open(archive) as t:
            t.extractall(dest, filter="data")
    (dest / ".complete").write_text(archive.name + "\n")
    return dest


def count_lines(root):
    n = 0
    for p in root.rglob("*.py"):
        with open(p, "rb") as f:
            n += sum(1 for _ in f)
    return n


def run_vramlint(binary, root, *args):
    proc = subprocess.run([binary, "check", *args, "."], cwd=root, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        # 2: some files could not be checked; the rest is still reported.
        print(f"  vramlint exited {proc.returncode} in {root.name}: {proc.stderr.strip()[:500]}")
    return proc.stdout


def split_diff(text):
    """Splits a unified diff into {path: the file's diff}."""
    files, path = {}, None
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            path = line[4:].strip()
            files[path] = ""
        if path is not None:
            files[path] += line
    return files


def changed_lines(diff):
    return sum(1 for l in diff.splitlines() if l[:1] in "+-" and l[:3] not in ("+++", "---"))


def read_baseline():
    entries = {}
    path = HERE / "baseline.tsv"
    if not path.exists():
        return entries
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) < 5:
            sys.exit(f"baseline.tsv: malformed line (want kind, project, where, what, verdict, why): {line!r}")
        kind, project, where, what, verdict = cols[:5]
        why = cols[5] if len(cols) > 5 else ""
        entries[(kind, project, where, what)] = (verdict, why)
    return entries


def write_baseline(current, old):
    lines = [
        "# Every finding and every fix diff of the ecosystem check, reviewed (see run.py).",
        "# kind\tproject\twhere\tcode or diff hash\tverdict\twhy",
    ]
    for key in sorted(current):
        verdict, why = old.get(key, ("unreviewed", current[key]))
        lines.append("\t".join([*key, verdict, why]))
    (HERE / "baseline.tsv").write_text("\n".join(lines) + "\n")


def check_project(binary, cache, name, version):
    """Fetches and checks one project: its name, its lines, its number of
    findings, and its entries (key -> description) of findings and fix
    diffs."""
    root = fetch(name, version, cache)
    project = f"{name}=={version}"
    entries = {}
    findings = json.loads(run_vramlint(binary, root, "--output-format", "json") or "[]")
    for d in findings:
        where = f"{d['file']}:{d['start']['line']}:{d['start']['column']}"
        fixes = "; ".join(f"{f['title']} ({f['safety']})" for f in d["fixes"]) or "no fix"
        # One line each: a message may quote code that spans lines.
        entries[("finding", project, where, d["code"])] = " ".join(f"{d['message'][:120]} | fixes: {fixes}".split())
    # What `--fix` (safe fixes) and `--fix --unsafe-fixes` would write;
    # each run only where the findings offer a fix it applies (most
    # projects have none: two runs fewer over most of the lines).
    safeties = {f["safety"] for d in findings for f in d["fixes"]}
    passes = [
        (kind, flags)
        for kind, flags, applied in (
            ("safe-fix", ["--fix"], {"safe"}),
            ("fix", ["--fix", "--unsafe-fixes"], {"safe", "unsafe"}),
        )
        if safeties & applied
    ]
    for kind, flags in passes:
        for path, diff in split_diff(run_vramlint(binary, root, *flags, "--diff")).items():
            digest = hashlib.sha256(diff.encode()).hexdigest()[:16]
            entries[(kind, project, path, digest)] = f"{changed_lines(diff)} changed lines"
    return project, count_lines(root), len(findings), entries


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vramlint", default=str(REPO / "vramlint"), help="the vramlint binary")
    ap.add_argument("--cache", default=os.environ.get("VRAMLINT_ECOSYSTEM_CACHE", str(Path.home() / ".cache" / "vramlint-ecosystem")))
    ap.add_argument("--write-baseline", action="store_true")
    args = ap.parse_args()
    cache = Path(args.cache)
    baseline = read_baseline()
    current = {}  # key -> description
    total_lines = total_findings = 0
    print(f"{'project':<32} {'lines':>8} {'findings':>9} {'per 10k':>8}")
    # Two projects at a time: most are small, and one check of a small
    # project leaves the second core idle. Results are printed and
    # gathered in the list's order.
    with ThreadPoolExecutor(max_workers=2) as pool:
        checked = pool.map(lambda p: check_project(args.vramlint, cache, *p), read_projects())
        for project, lines, findings, entries in checked:
            current.update(entries)
            total_lines += lines
            total_findings += findings
            print(f"{project:<32} {lines:>8} {findings:>9} {findings / lines * 1e4:>8.2f}", flush=True)
    print(f"{'total':<32} {total_lines:>8} {total_findings:>9} {total_findings / max(total_lines, 1) * 1e4:>8.2f}")

    if args.write_baseline:
        write_baseline(current, baseline)
        print(f"wrote {HERE / 'baseline.tsv'}")
        baseline = read_baseline()

    failed = False
    for key in sorted(current.keys() - baseline.keys()):
        print(f"NEW {key[0]}: {key[1]} {key[2]} {key[3]}: {current[key]}")
        failed = True
    for key in sorted(baseline.keys() - current.keys()):
        print(f"VANISHED {key[0]}: {key[1]} {key[2]} {key[3]} (was reviewed {baseline[key][0]}): remove it from the baseline")
        failed = True
    for key in sorted(current.keys() & baseline.keys()):
        verdict, why = baseline[key]
        if (key[0], verdict) not in (("finding", "true"), ("fix", "right"), ("safe-fix", "right")):
            print(f"REVIEW {key[0]}: {key[1]} {key[2]} {key[3]} is {verdict}: {why}")
            failed = True
    print("ecosystem check: " + ("FAILED" if failed else "all findings and fixes match the reviewed baseline"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
