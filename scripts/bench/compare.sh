#!/bin/bash
# Runs vramlint's, ruff's and ast-grep's language servers side by side
# through tools/lspbench, interleaved, on the given Python files (the
# tables in docs/PERFORMANCE.md), then `check` against `ast-grep scan` and
# `ruff check` on the given folders.
#
#   scripts/bench/compare.sh [-r ROUNDS] FILE.py... [-- DIR...]
#
# Needs ruff and ast-grep on PATH (pip install ruff ast-grep-cli). Each
# file is copied, with tools/astgrep's rules, into a folder of its own:
# ast-grep's server reads sgconfig.yml from its working directory, and the
# folder is the workspace each server is given.
set -euo pipefail
rounds=2
if [ "${1:-}" = "-r" ]; then rounds=$2; shift 2; fi
files=() dirs=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; dirs=("$@"); break; fi
  files+=("$(realpath "$1")"); shift
done
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -C "$repo" -o "$work/vramlint" ./cmd/vramlint
go build -C "$repo" -o "$work/lspbench" ./tools/lspbench
for round in $(seq "$rounds"); do
  for f in "${files[@]}"; do
    dir="$work/$(basename "$f" .py)"
    mkdir -p "$dir" && cp "$f" "$dir/" && cp -r "$repo/tools/astgrep/." "$dir/"
    file="$dir/$(basename "$f")"
    cd "$dir"
    echo "=== round $round $(basename "$f"): vramlint"
    "$work/lspbench" --server "$work/vramlint server --debounce 0" "$file"
    echo "=== round $round $(basename "$f"): ruff"
    "$work/lspbench" --server "ruff server" "$file"
    echo "=== round $round $(basename "$f"): ast-grep (10 edits a place, no typing)"
    "$work/lspbench" --server "ast-grep lsp" --typing=false --edits 10 --timeout 60s "$file"
  done
  for d in "${dirs[@]}"; do
    echo "=== round $round check $d"
    /usr/bin/time -f "vramlint check: %e s, %M KB peak" "$work/vramlint" check "$d" > /dev/null || true
    /usr/bin/time -f "ast-grep scan: %e s, %M KB peak" ast-grep scan -c "$repo/tools/astgrep/sgconfig.yml" "$d" > /dev/null || true
    /usr/bin/time -f "ruff check: %e s, %M KB peak" ruff check --no-cache --select ALL -q "$d" > /dev/null || true
  done
done
