#!/usr/bin/env bash
# The VS Code extension's tests: type check and unit tests, then the
# end-to-end test in real VS Code (code-server + headless Chromium) with
# the packaged linux-x64 .vsix. Screenshots and logs go to $ARTIFACTS
# (default: a temporary folder, printed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(cd ../.. && pwd)"

npm ci --no-audit --no-fund --loglevel=error
npm test

# The .vsix under test bundles the server built from this checkout.
mkdir -p bin
(cd "$repo" && CGO_ENABLED=1 go build -o editors/vscode/bin/vramlint ./cmd/vramlint)
vsix="$(mktemp -d)/vramlint-linux-x64.vsix"
npm run --silent build
npx vsce package --skip-license --no-dependencies --target linux-x64 -o "$vsix" > /dev/null

cs="$(bash test/install-code-server.sh)"
export ARTIFACTS="${ARTIFACTS:-$(mktemp -d /tmp/vramlint-vscode-e2e.XXXXXX)}"
export CODE_SERVER="$cs/cs/node_modules/.bin/code-server" VSIX="$vsix" VRAMLINT="$repo/editors/vscode/bin/vramlint" REPO="$repo"
# code-server runs on the Node 24 it was built for.
PATH="$cs/node24/bin:$PATH" npm run --silent e2e
echo "screenshots: $ARTIFACTS"
