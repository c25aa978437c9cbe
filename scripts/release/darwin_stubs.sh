#!/usr/bin/env bash
# Writes text-based stubs (.tbd) of the macOS libraries Go's standard
# library links against beyond libSystem (which zig ships): CoreFoundation
# and Security (crypto/x509 reads the system roots through them) and
# libresolv (internal/syscall/unix asks for -lresolv). With them zig links
# macOS binaries here, without Apple's SDK. A stub only names a library's
# install path and the symbols taken from it; at run time dyld loads the
# real library, present on every macOS.
#
# The symbols are exactly those Go's sources import from each framework
# (//go:cgo_import_dynamic), read from this Go installation.
#
# usage: darwin_stubs.sh DIR   (then link with -F DIR -L DIR)
set -euo pipefail
out="$1"
goroot="$(go env GOROOT)"
for framework in CoreFoundation Security; do
  install="/System/Library/Frameworks/$framework.framework/Versions/A/$framework"
  symbols="$(grep -rh '^//go:cgo_import_dynamic' "$goroot/src" --include='*.go' \
    | awk -v lib="\"$install\"" '$4 == lib { print "_" $3 }' | sort -u | paste -sd, -)"
  if [ -z "$symbols" ]; then
    echo "darwin_stubs.sh: Go imports nothing from $framework?" >&2
    exit 1
  fi
  dir="$out/$framework.framework"
  mkdir -p "$dir"
  cat > "$dir/$framework.tbd" <<TBD
--- !tapi-tbd
tbd-version:     4
targets:         [ x86_64-macos, arm64-macos ]
install-name:    '$install'
current-version: 0
exports:
  - targets:         [ x86_64-macos, arm64-macos ]
    symbols:         [ ${symbols//,/, } ]
...
TBD
done
# Go takes nothing from libresolv by name (its resolver calls go through
# libSystem), but passes -lresolv: an empty stub satisfies it.
cat > "$out/libresolv.tbd" <<TBD
--- !tapi-tbd
tbd-version:     4
targets:         [ x86_64-macos, arm64-macos ]
install-name:    '/usr/lib/libresolv.9.dylib'
current-version: 0
...
TBD
