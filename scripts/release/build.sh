#!/usr/bin/env bash
# Builds every release artefact into dist/ (or --out): the vramlint binary
# for each target, cross-compiled here with zig cc (tree-sitter is C, so
# cgo needs a C compiler per target); a Python wheel per platform with the
# binary inside; a VS Code package per platform with the binary inside, and
# a universal one without; an archive per target for GitHub releases;
# SHA256SUMS. Every binary is checked by
# tools/inspectbin and every wheel by twine, check-wheel-contents and (for
# Linux) auditwheel. docs/RELEASING.md says how to release.
#
# usage: scripts/release/build.sh [--version X.Y.Z] [--targets "linux-amd64 ..."]
#                                 [--no-vsix] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$(pwd)"

all_targets="linux-amd64 linux-arm64 darwin-amd64 darwin-arm64 windows-amd64"
version="$(sed -n 's/^const devVersion = "\(.*\)"$/\1/p' cmd/vramlint/version.go)"
targets="$all_targets"
vsix=1
out=dist
while [ $# -gt 0 ]; do
  case "$1" in
    --version) version="$2"; shift 2 ;;
    --targets) targets="$2"; shift 2 ;;
    --no-vsix) vsix=0; shift ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: scripts/release/build.sh [--version X.Y.Z] [--targets \"$all_targets\"] [--no-vsix] [--out DIR]" >&2; exit 2 ;;
  esac
done
out="$(mkdir -p "$out" && cd "$out" && pwd)"

# target -> GOOS GOARCH zig-target wheel-platform-tags vsce-target
describe() {
  case "$1" in
    linux-amd64) echo "linux amd64 x86_64-linux-musl manylinux_2_17_x86_64.manylinux2014_x86_64.musllinux_1_1_x86_64 linux-x64" ;;
    linux-arm64) echo "linux arm64 aarch64-linux-musl manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64 linux-arm64" ;;
    # Go 1.26 runs on macOS 12 and later; zig's default would be 13.
    darwin-amd64) echo "darwin amd64 x86_64-macos.12.0 macosx_12_0_x86_64 darwin-x64" ;;
    darwin-arm64) echo "darwin arm64 aarch64-macos.12.0 macosx_12_0_arm64 darwin-arm64" ;;
    windows-amd64) echo "windows amd64 x86_64-windows-gnu win_amd64 win32-x64" ;;
    *) echo "unknown target $1 (known: $all_targets)" >&2; return 1 ;;
  esac
}
for t in $targets; do describe "$t" > /dev/null; done

# The release tools, in a cached virtual environment.
venv="$(bash scripts/release/tools_venv.sh)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat > "$work/zcc" <<ZCC
#!/bin/sh
exec "$venv/bin/python" -m ziglang cc -target "\$ZIG_TARGET" "\$@"
ZCC
chmod +x "$work/zcc"
bash scripts/release/darwin_stubs.sh "$work/darwin-stubs"

commit="$(git rev-parse HEAD)"
date="$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ)"
export SOURCE_DATE_EPOCH="$(git log -1 --format=%ct)"
ldflags="-s -w -X main.version=$version -X main.commit=$commit -X main.date=$date"

checks=()
for t in $targets; do
  read -r goos goarch zig _ _ <<< "$(describe "$t")"
  exe=vramlint; [ "$goos" = windows ] && exe=vramlint.exe
  extra="" cgo_ldflags=""
  [ "$goos" = linux ] && extra="-extldflags -static"
  [ "$goos" = darwin ] && cgo_ldflags="-F$work/darwin-stubs -L$work/darwin-stubs"
  echo "building $t" >&2
  ZIG_TARGET="$zig" CC="$work/zcc" CGO_ENABLED=1 CGO_LDFLAGS="$cgo_ldflags" GOOS="$goos" GOARCH="$goarch" \
    go build -trimpath -ldflags "$ldflags $extra" -o "$out/bin/$t/$exe" ./cmd/vramlint
  # zig's macOS link leaves an object named `-.o` in the working folder.
  rm -f -- ./-.o
  checks+=("$goos/$goarch=$out/bin/$t/$exe")
done
go run ./tools/inspectbin -max-mb 15 -macos-min 12.0 "${checks[@]}"

for t in $targets; do
  read -r goos _ _ tags _ <<< "$(describe "$t")"
  exe=vramlint; [ "$goos" = windows ] && exe=vramlint.exe
  whl="$("$venv/bin/python" scripts/release/build_wheel.py --binary "$out/bin/$t/$exe" --version "$version" \
    --tag "$tags" --readme README.md --out "$out")"
  "$venv/bin/twine" check --strict "$whl" > /dev/null
  # W007 "library is empty": the wheel carries a program, no Python package.
  "$venv/bin/check-wheel-contents" --ignore W007 "$whl" > /dev/null
  if [ "$goos" = linux ]; then
    audit="$("$venv/bin/auditwheel" show "$whl" 2>/dev/null)" || true
    grep -q "requires no external shared libraries" <<<"$audit" ||
      { echo "auditwheel: $whl needs shared libraries" >&2; exit 1; }
  fi
  echo "$whl"
done

if [ "$vsix" = 1 ]; then
  vsix_version="${version%%-*}" # the Marketplace takes X.Y.Z only
  (cd editors/vscode && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build)
  for t in $targets; do
    read -r goos _ _ _ vsce <<< "$(describe "$t")"
    exe=vramlint; [ "$goos" = windows ] && exe=vramlint.exe
    rm -rf editors/vscode/bin && mkdir -p editors/vscode/bin
    cp "$out/bin/$t/$exe" editors/vscode/bin/
    (cd editors/vscode && npx vsce package "$vsix_version" --no-git-tag-version --no-update-package-json \
      --skip-license --no-dependencies --target "$vsce" -o "$out/vramlint-$vsce-$vsix_version.vsix" > /dev/null)
    echo "$out/vramlint-$vsce-$vsix_version.vsix"
  done
  # Universal: no binary; the extension finds vramlint in the Python
  # environment or on PATH.
  rm -rf editors/vscode/bin
  (cd editors/vscode && npx vsce package "$vsix_version" --no-git-tag-version --no-update-package-json \
    --skip-license --no-dependencies -o "$out/vramlint-$vsix_version.vsix" > /dev/null)
  echo "$out/vramlint-$vsix_version.vsix"
fi

# One archive per target for GitHub releases (and Mason): the binary alone.
for t in $targets; do
  read -r goos _ _ _ _ <<< "$(describe "$t")"
  if [ "$goos" = windows ]; then
    (cd "$out/bin/$t" && rm -f "$out/vramlint-$version-$t.zip" && "$venv/bin/python" -m zipfile -c "$out/vramlint-$version-$t.zip" vramlint.exe)
    echo "$out/vramlint-$version-$t.zip"
  else
    tar -C "$out/bin/$t" --owner=0 --group=0 --mtime="@$SOURCE_DATE_EPOCH" -czf "$out/vramlint-$version-$t.tar.gz" vramlint
    echo "$out/vramlint-$version-$t.tar.gz"
  fi
done

(cd "$out" && find . -type f ! -name SHA256SUMS | sed 's|^\./||' | sort | xargs sha256sum > SHA256SUMS)
echo "$out/SHA256SUMS"
