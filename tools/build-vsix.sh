#!/usr/bin/env bash
# Builds the VS Code extension for this platform: dist/stepscope-<version>-<target>.vsix.
# The .vsix carries the bundled client (extension/dist), the trace panel's webview bundle
# (panel/dist), the server bootstrap (bundled/tool),
# the server and its pure-Python dependencies (bundled/libs, from tools/bundled-requirements.txt;
# the server's compiled modules, the trace column scanner and the nesting kernel, are built for
# CPython's stable ABI, so one build serves every version) and
# its compiled dependencies (orjson, msgspec, zlib-ng) for each supported CPython
# (bundled/native/cp310 ... cp314), so any Python >= 3.10 can run it.
# Needs the tools from tools/setup-tools.sh --build-only (Node 24, vsce); a C compiler, when there is
# one, builds the server's compiled modules.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TOOLS="${STEPSCOPE_TOOLS:-$ROOT/.cache/tools}"
[ -d "$TOOLS" ] && TOOLS="$(cd "$TOOLS" && pwd)"   # vsce runs in another folder
# compiled dependencies, one wheel per CPython version
NATIVE_WHEELS="orjson==3.13.0 msgspec==0.23.0 zlib-ng==1.1.0"
PYTHON_MINORS="10 11 12 13 14"

log() { printf 'build-vsix: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

VSCE="$TOOLS/vsce/node_modules/.bin/vsce"
NODE24_BIN="$TOOLS/node24/node_modules/.bin"
[ -x "$VSCE" ] && [ -x "$NODE24_BIN/node" ] || die "Node 24 and vsce are missing; run tools/setup-tools.sh --build-only first"
export PATH="$NODE24_BIN:$PATH"

if [ -n "${STEPSCOPE_BUILD_PYTHON:-}" ]; then
  PYTHON="$STEPSCOPE_BUILD_PYTHON"
elif [ -x "$ROOT/.venv/bin/python" ]; then
  PYTHON="$ROOT/.venv/bin/python"
else
  PYTHON="$(command -v python3)" || die "no python3 to build the server wheel with"
fi

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) TARGET=linux-x64; WHEEL_PLATFORM=manylinux_2_17_x86_64 ;;
  Linux-aarch64) TARGET=linux-arm64; WHEEL_PLATFORM=manylinux_2_17_aarch64 ;;
  *) die "building on $(uname -s) $(uname -m) is not supported yet (Linux x86_64 and aarch64 are)" ;;
esac
VERSION="$(node -p "require('./package.json').version")"
VSIX="dist/stepscope-$VERSION-$TARGET.vsix"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

log "client: npm ci, type check, bundle"
npm ci --no-audit --no-fund --loglevel=error
node_modules/.bin/tsc -p .
node esbuild.mjs --production

log "trace panel: type check, bundle (panel/dist/panel.js + panel.css)"
node_modules/.bin/tsc -p panel
node panel/build.mjs --production

log "server: wheel and dependencies into bundled/"
rm -rf bundled
mkdir -p bundled/tool bundled/libs bundled/native
cp extension/bundled_tool/server.py bundled/tool/server.py
# The wheel build is chatty; its log is shown only when it fails.
"$PYTHON" -m pip wheel . --no-deps --quiet -w "$WORK/wheel" >"$WORK/wheel.log" 2>&1 \
  || { cat "$WORK/wheel.log" >&2; die "building the stepscope wheel failed"; }
"$PYTHON" -m pip install --quiet --no-compile --no-deps --only-binary=:all: \
  --target bundled/libs "$WORK"/wheel/stepscope-*.whl
# pure-Python wheels only (tomli also publishes wheels compiled for one CPython): what the oldest
# supported Python can load, every newer one can
"$PYTHON" -m pip install --quiet --no-compile --no-deps --only-binary=:all: \
  --implementation py --platform any --python-version 3.10 \
  --target bundled/libs -r tools/bundled-requirements.txt
rm -rf bundled/libs/bin   # console scripts point at the build interpreter; the editor never uses them
[ -f bundled/libs/stepscope/trace/_columns.abi3.so ] && [ -f bundled/libs/stepscope/trace/_rows.abi3.so ] \
  && [ -f bundled/libs/stepscope/analysis/_nesting.abi3.so ] && [ -f bundled/libs/stepscope/analysis/_timeline.abi3.so ] \
  || log "warning: the compiled modules were not built (no C compiler?): traces will be analysed 2-3x slower; with a C compiler (Debian: build-essential) the next build has them"

for minor in $PYTHON_MINORS; do
  # shellcheck disable=SC2086  # one argument per wheel
  "$PYTHON" -m pip download --quiet --only-binary=:all: --no-deps \
    --python-version "3.$minor" --platform "$WHEEL_PLATFORM" \
    -d "$WORK/native/cp3$minor" $NATIVE_WHEELS
  for whl in "$WORK"/native/cp3$minor/*.whl; do
    "$PYTHON" -m zipfile -e "$whl" "bundled/native/cp3$minor"
  done
done
find bundled -name __pycache__ -type d -prune -exec rm -rf {} +
"$PYTHON" tools/check_bundle.py bundled

log "packaging $VSIX"
mkdir -p dist
license_flag=()
ls LICENSE* >/dev/null 2>&1 || license_flag=(--skip-license)
# vsce lists every file under the folder it packages and matches each against .vscodeignore, which
# takes half a minute beside .venv (torch alone is over 20,000 files): it packages a folder that
# holds only what .vscodeignore lets in, and the readme.
STAGE="$WORK/package"
mkdir -p "$STAGE/extension" "$STAGE/panel" "$STAGE/docs"
cp package.json .vscodeignore "$STAGE/"
cp LICENSE* "$STAGE/" 2>/dev/null || true
cp -r extension/dist extension/icon.png "$STAGE/extension/"
cp -r panel/dist "$STAGE/panel/"
cp -r bundled "$STAGE/"
cp docs/extension.md "$STAGE/docs/"
# The readme is docs/extension.md: its relative images and links point into the repository's docs/.
DOCS_URL="https://github.com/stepscope/stepscope"
(cd "$STAGE" && "$VSCE" package --target "$TARGET" --no-dependencies --allow-missing-repository \
  --readme-path docs/extension.md --baseImagesUrl "$DOCS_URL/raw/HEAD/docs" \
  --baseContentUrl "$DOCS_URL/blob/HEAD/docs" "${license_flag[@]}" -o "$ROOT/$VSIX" >&2)
log "built $ROOT/$VSIX"
echo "$ROOT/$VSIX"
