#!/usr/bin/env bash
# Runs each fuzz target of vramlint for a while (default 20s each; CI uses
# the default, docs/RELIABILITY.md says how to run them longer):
#   scripts/fuzz.sh 10m
# The seed corpora (testdata/fuzz/ and the f.Add seeds) run with every
# `go test ./...`; this explores beyond them. A failing input is written to
# the package's testdata/fuzz/<Target>/, where it becomes a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
time="${1:-20s}"
targets=(
  "./analysis/rules FuzzAnalyze"
  "./analysis/rules FuzzIncremental"
  "./codeactions FuzzFixes"
  "./analysis/source FuzzMapper"
  "./server FuzzStream"
)
for t in "${targets[@]}"; do
  set -- $t
  echo "== $2 ($1) for $time"
  go test "$1" -run '^$' -fuzz "^$2\$" -fuzztime "$time" 2>&1 | grep -v '^fuzz: elapsed' || { echo "$2 failed" >&2; exit 1; }
done
