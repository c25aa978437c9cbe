#!/usr/bin/env bash
# The JetBrains (LSP4IJ) test: an LSP4J client session against the server
# started with the template's own command (see Session.java).
set -euo pipefail
cd "$(dirname "$0")"
repo="$(cd ../../.. && pwd)"
bin="$(mktemp -d)"
(cd "$repo" && CGO_ENABLED=1 go build -o "$bin/vramlint" ./cmd/vramlint)
work="$(mktemp -d)"
# The template's command is `vramlint server`: the binary under test goes
# first on PATH, as a user's install would be.
PATH="$bin:$PATH" mvn -q -B compile exec:java -Dexec.args="$repo/editors/jetbrains/template $repo $work"
