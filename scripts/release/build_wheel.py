"""Writes a vramlint wheel around one prebuilt binary, as ruff's and uv's
wheels are: the binary goes to the wheel's scripts folder, so `pip install`
puts a `vramlint` executable in the environment's bin/ (Scripts\\ on
Windows), and no Python code runs when it lints.

The wheel is written with `wheel.wheelfile.WheelFile` (pypa/wheel), which
records every file's hash in RECORD, rather than zipped by hand.

usage: build_wheel.py --binary PATH --version VERSION --tag PLATFORM_TAG
                --readme README.md --out DIR
"""

import argparse
import os
import re
import stat
import sys
import zipfile

from wheel.wheelfile import WheelFile

SUMMARY = (
    "Finds the PyTorch code that wastes or leaks GPU memory, explains it, "
    "and fixes it: a linter and language server"
)


def pep440(version: str) -> str:
    """0.1.0 -> 0.1.0; 0.1.0-dev -> 0.1.0.dev0; 1.0.0-rc1 -> 1.0.0rc1."""
    m = re.fullmatch(r"v?(\d+\.\d+\.\d+)(?:-(dev|alpha|a|beta|b|rc)\.?(\d*))?", version)
    if not m:
        raise SystemExit(f"build_wheel.py: version {version!r} is not X.Y.Z[-dev|-rcN]")
    base, pre, n = m.group(1), m.group(2), m.group(3) or "0"
    if pre is None:
        return base
    if pre == "dev":
        return f"{base}.dev{n}"
    return base + {"alpha": "a", "a": "a", "beta": "b", "b": "b", "rc": "rc"}[pre] + n


def metadata(version: str, readme: str) -> str:
    headers = [
        ("Metadata-Version", "2.1"),
        ("Name", "vramlint"),
        ("Version", version),
        ("Summary", SUMMARY),
        ("Home-page", "https://github.com/vramlint/vramlint"),
        ("Project-URL", "Repository, https://github.com/vramlint/vramlint"),
        ("Project-URL", "Documentation, https://github.com/vramlint/vramlint#readme"),
        ("Keywords", "pytorch,cuda,gpu,memory,linter,language-server"),
        ("Classifier", "Development Status :: 3 - Alpha"),
        ("Classifier", "Environment :: Console"),
        ("Classifier", "Intended Audience :: Developers"),
        ("Classifier", "Intended Audience :: Science/Research"),
        ("Classifier", "Programming Language :: Python :: 3"),
        ("Classifier", "Topic :: Software Development :: Quality Assurance"),
        ("Requires-Python", ">=3.8"),
        ("Description-Content-Type", "text/markdown"),
    ]
    return "".join(f"{k}: {v}\n" for k, v in headers) + "\n" + readme


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--tag", required=True, help="platform tag(s), dot-separated")
    ap.add_argument("--readme", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    version = pep440(args.version)
    exe = "vramlint.exe" if args.binary.endswith(".exe") else "vramlint"
    name = f"vramlint-{version}-py3-none-{args.tag}.whl"
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, name)
    dist_info = f"vramlint-{version}.dist-info"
    with open(args.readme, encoding="utf-8") as f:
        readme = f.read()
    with open(args.binary, "rb") as f:
        binary = f.read()

    # A fixed timestamp: the same inputs give the same wheel.
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    os.environ["SOURCE_DATE_EPOCH"] = str(max(epoch, 315532800))
    with WheelFile(path, "w") as wf:
        script = zipfile.ZipInfo(f"vramlint-{version}.data/scripts/{exe}", date_time=(1980, 1, 1, 0, 0, 0))
        script.external_attr = (stat.S_IFREG | 0o755) << 16
        script.compress_type = zipfile.ZIP_DEFLATED
        wf.writestr(script, binary)
        wf.writestr(f"{dist_info}/METADATA", metadata(version, readme))
        wheel_file = "Wheel-Version: 1.0\nGenerator: vramlint-release\nRoot-Is-Purelib: false\n"
        for platform in args.tag.split("."):
            wheel_file += f"Tag: py3-none-{platform}\n"
        wf.writestr(f"{dist_info}/WHEEL", wheel_file)
    print(path)


if __name__ == "__main__":
    sys.exit(main())
