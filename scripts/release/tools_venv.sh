#!/usr/bin/env bash
# Makes sure the release tools (scripts/release/requirements.txt) are
# installed in a virtual environment cached by the hash of their pinned
# versions, and prints its path. Used by build.sh and test.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
cache="${VRAMLINT_RELEASE_CACHE:-$HOME/.cache/vramlint-release}"
venv="$cache/venv-$(sha256sum scripts/release/requirements.txt | cut -c1-12)"
if [ ! -x "$venv/bin/python" ] || [ ! -f "$venv/ok" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r scripts/release/requirements.txt >&2
  touch "$venv/ok"
fi
echo "$venv"
