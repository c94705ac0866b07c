#!/usr/bin/env bash
# The VS Code client's own unit tests: type check (sources and tests), bundle each
# extension/test/*.test.ts with esbuild, run them with Node's built-in runner (`node --test`).
# Needs Node 24 from tools/setup-tools.sh; installs the npm dependencies when they are missing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TOOLS="${STEPSCOPE_TOOLS:-$ROOT/.cache/tools}"
NODE24_BIN="$TOOLS/node24/node_modules/.bin"
[ -x "$NODE24_BIN/node" ] || { echo "test-client: Node 24 is missing; run tools/setup-tools.sh first" >&2; exit 1; }
export PATH="$NODE24_BIN:$PATH"

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
node_modules/.bin/tsc -p .
rm -rf extension/out/test
node esbuild.mjs --tests
node --test extension/out/test/*.test.cjs
