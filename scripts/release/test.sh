#!/usr/bin/env bash
# Tests of the release artefacts, run by CI (.ci/test):
#  1. the release script builds the Linux binaries, wheels, VS Code packages
#     and archives (the macOS and Windows ones too, unless
#     VRAMLINT_RELEASE_TARGETS narrows them), and inspectbin checks them;
#  2. the manylinux x86_64 wheel installs into a fresh virtual environment
#     and `vramlint version` and `vramlint check examples/` work from it with
#     no Go and no C compiler on PATH, with the same output as a build here;
#  3. the linux/arm64 binary gives the same output under qemu-user-static;
#  4. the pre-commit hooks work through `pre-commit try-repo` on a fixture
#     repository, installing the wheel built in step 1;
#  5. actionlint accepts the documented GitHub Actions workflow;
#  6. the Mason package draft names an archive that step 1 built, per target.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$(pwd)"
version=0.1.0 # the version pyproject.toml's pre-commit package pins
targets="${VRAMLINT_RELEASE_TARGETS:-linux-amd64 linux-arm64 darwin-amd64 darwin-arm64 windows-amd64}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
dist="$work/dist"
fail() { echo "release test: $*" >&2; exit 1; }

echo "== 1. build ($targets)"
start=$(date +%s)
bash scripts/release/build.sh --version "$version" --targets "$targets" --out "$dist" > "$work/build.log" 2>&1 ||
  { cat "$work/build.log" >&2; fail "build.sh failed"; }
grep -E "^(linux|darwin|windows)/" "$work/build.log"
echo "built in $(( $(date +%s) - start )) s"
venv_tools="$(bash scripts/release/tools_venv.sh)"
# Listings are read whole before grep looks at them: `unzip -l | grep -q`
# under pipefail fails when grep stops reading early and unzip gets SIGPIPE.
platform_files="$(unzip -Z1 "$dist/vramlint-linux-x64-$version.vsix")"
universal_files="$(unzip -Z1 "$dist/vramlint-$version.vsix")"
grep -qx "extension/bin/vramlint" <<<"$platform_files" || fail "the linux-x64 .vsix has no binary"
! grep -q "^extension/bin/" <<<"$universal_files" || fail "the universal .vsix has a binary"
(cd "$dist" && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not match"

# What a build here prints, to compare with.
go build -o "$work/native" ./cmd/vramlint
set +e
"$work/native" check examples/ > "$work/native.out" 2>&1
native_status=$?
set -e
[ "$native_status" = 1 ] || fail "the example should have findings (exit 1), got $native_status"

echo "== 2. the wheel, without Go or a C compiler"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check --no-index \
  "$dist"/vramlint-$version-py3-none-manylinux_*x86_64*.whl
# Only the environment's scripts folder on PATH: no go, gcc or cc.
for tool in go gcc cc; do
  PATH="$work/venv/bin" command -v "$tool" > /dev/null && fail "$tool is visible to the wheel test"
done
wheel_version="$(PATH="$work/venv/bin" vramlint version)"
grep -q "^vramlint $version (commit " <<<"$wheel_version" || fail "vramlint version from the wheel: $wheel_version"
set +e
PATH="$work/venv/bin" vramlint check examples/ > "$work/wheel.out" 2>&1
status=$?
set -e
[ "$status" = 1 ] && cmp -s "$work/wheel.out" "$work/native.out" || { diff "$work/native.out" "$work/wheel.out" >&2; fail "check from the wheel differs (exit $status)"; }
echo "ok: $(PATH="$work/venv/bin" vramlint version)"

echo "== 3. linux/arm64 under qemu"
command -v qemu-aarch64-static > /dev/null || fail "qemu-user-static is not installed"
set +e
qemu-aarch64-static "$dist/bin/linux-arm64/vramlint" check examples/ > "$work/arm64.out" 2>&1
status=$?
set -e
[ "$status" = 1 ] && cmp -s "$work/arm64.out" "$work/native.out" || { diff "$work/native.out" "$work/arm64.out" >&2; fail "arm64 output differs (exit $status)"; }
echo "ok: $(qemu-aarch64-static "$dist/bin/linux-arm64/vramlint" version)"

echo "== 4. pre-commit"
# pip installs the hook repository (pyproject.toml) and its vramlint
# dependency from local wheels only: the one built above, and hatchling.
deps="$work/deps"
"$venv_tools/bin/pip" download --quiet --disable-pip-version-check -d "$deps" \
  "$(sed -n 's/^requires = \["\(.*\)"\]$/\1/p' pyproject.toml)"
export PIP_NO_INDEX=1 PIP_FIND_LINKS="$dist $deps" PRE_COMMIT_HOME="$work/pre-commit-home"
fixture="$work/fixture"
mkdir -p "$fixture" && cd "$fixture"
git init -q && git config user.email test@example.com && git config user.name test
cp "$repo/testdata/seed/dataloader_leak.py" leaky.py
printf 'import torch\n\nprint(torch.ones(2).sum())\n' > clean.py
git add . && git commit -qm fixture
set +e
"$venv_tools/bin/pre-commit" try-repo "$repo" vramlint --all-files > "$work/hook.out" 2>&1
status=$?
set -e
[ "$status" = 1 ] && grep -q "leaky.py:42:36: GPU001" "$work/hook.out" || { cat "$work/hook.out" >&2; fail "the vramlint hook did not report leaky.py (exit $status)"; }
git rm -q leaky.py && git commit -qm "only the clean file"
"$venv_tools/bin/pre-commit" try-repo "$repo" vramlint --all-files > "$work/hook.out" 2>&1 || { cat "$work/hook.out" >&2; fail "the vramlint hook fails on a clean file"; }
# vramlint-fix applies the safe fixes: the file becomes what check --fix writes.
cp "$repo/examples/train.py" fixable.py && git add fixable.py && git commit -qm fixable
cp fixable.py "$work/expected.py" && "$work/native" check --fix "$work/expected.py" > /dev/null 2>&1 || true
cmp -s fixable.py "$work/expected.py" && fail "check --fix changes nothing in the fixture: the test would prove nothing"
set +e
"$venv_tools/bin/pre-commit" try-repo "$repo" vramlint-fix --all-files > "$work/hook.out" 2>&1
status=$?
set -e
[ "$status" = 1 ] && cmp -s fixable.py "$work/expected.py" || { cat "$work/hook.out" >&2; diff "$work/expected.py" fixable.py >&2; fail "vramlint-fix did not write what check --fix writes"; }
cd "$repo"
unset PIP_NO_INDEX PIP_FIND_LINKS PRE_COMMIT_HOME
echo "ok"

echo "== 5. actionlint"
go run github.com/rhysd/actionlint/cmd/actionlint@v1.7.12 -shellcheck= -pyflakes= docs/ci/github-actions.yml
echo "ok"

echo "== 6. the Mason package draft"
"$venv_tools/bin/python" - "$dist" "$version" <<'PY'
import os, sys, yaml
dist, version = sys.argv[1], sys.argv[2]
pkg = yaml.safe_load(open("editors/nvim/mason/package.yaml"))
assert pkg["name"] == "vramlint" and pkg["source"]["id"].startswith("pkg:github/vramlint/vramlint@v"), pkg
want = {"linux_x64", "linux_arm64", "darwin_x64", "darwin_arm64", "win_x64"}
got = {a["target"] for a in pkg["source"]["asset"]}
assert got == want, f"targets {got}"
for asset in pkg["source"]["asset"]:
    name = asset["file"].replace('{{ version | strip_prefix "v" }}', version)
    if not os.path.exists(os.path.join(dist, name)) and os.environ.get("VRAMLINT_RELEASE_TARGETS") is None:
        raise SystemExit(f"{asset['target']}: {name} is not among the release archives")
assert pkg["neovim"]["lspconfig"] == "vramlint"
print("ok")
PY
