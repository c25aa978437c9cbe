#!/usr/bin/env bash
# Runs each fuzz target of vramlint for a fixed number of inputs (20-55 s
# each on a 2-core machine, about 5 min in all; CI uses this default), or for a time you give
# (docs/RELIABILITY.md says how to run them longer):
#   scripts/fuzz.sh          # counted: what CI runs
#   scripts/fuzz.sh 10m      # timed
# Why counted by default: with a duration, Go 1.26's fuzz coordinator can
# report "context deadline exceeded" as a failure when the time runs out
# while a worker is busy (golang/go#75804, fixed in Go 1.27), which made CI
# fail with no failing input. A count has no deadline to race, and bounding
# minimization by a count too keeps one new input from taking a minute.
# If a timed run fails with only "context deadline exceeded" and writes no
# file under testdata/fuzz/, it is that bug, not a finding.
# The seed corpora (testdata/fuzz/ and the f.Add seeds) run with every
# `go test ./...`; this explores beyond them. A failing input is written to
# the package's testdata/fuzz/<Target>/, where it becomes a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
time="${1:-}"
# package, target, inputs for the counted run
targets=(
  "./analysis/rules FuzzAnalyze 100000x"
  "./analysis/rules FuzzIncremental 8000x"
  "./analysis/rules FuzzIncrementalLargeClass 300x"
  "./analysis/rules FuzzIncrementalKeptClass 200x"
  "./codeactions FuzzFixes 20000x"
  "./analysis/source FuzzMapper 200000x"
  "./server FuzzStream 100000x"
  "./server FuzzEncodedString 200000x"
  "./server FuzzDecodeDidOpen 200000x"
)
for t in "${targets[@]}"; do
  set -- $t
  budget=(-fuzztime "$3" -fuzzminimizetime 100x)
  if [[ -n "$time" ]]; then
    budget=(-fuzztime "$time")
  fi
  echo "== $2 ($1): ${budget[*]}"
  if ! go test "$1" -run '^$' -fuzz "^$2\$" "${budget[@]}" 2>&1 | grep -v '^fuzz: elapsed'; then
    # The failing input lives only on this machine: print it, so that a
    # CI log is enough to reproduce the failure (save it under the same
    # name in testdata/fuzz/$2/ and run go test).
    git ls-files --others --exclude-standard -- "$1/testdata/fuzz/$2" | while read -r f; do
      echo "== failing input $f:"
      cat "$f"
    done
    echo "$2 failed" >&2
    exit 1
  fi
done
