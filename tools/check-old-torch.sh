#!/usr/bin/env bash
# Checks the oldest supported user interpreter: Python 3.10 + torch 2.1.2.
#
# 1. Creates (once) a venv with that pair at $OLD_VENV (default .cache/py310-torch21): torch from
#    PyPI without its declared dependencies, then the pure-Python ones it imports, numpy<2, and the
#    nvidia-* CUDA runtime packages its PyPI build loads at import even on a CPU-only machine (its
#    own pinned versions; triton is left out). With TORCH_INDEX_URL set to a CPU-only index
#    (https://download.pytorch.org/whl/cpu), torch==2.1.2+cpu is installed instead and no nvidia-*
#    package is needed. TORCH_WHEEL installs a wheel file already downloaded.
# 2. Profiles, with `--python` pointing at that venv (Stepscope itself runs from $STEPSCOPE_PY,
#    default .venv/bin/python), in a throwaway copy of examples/: the CPU example as text and with
#    --shapes / --memory / --stack, a --function step, a torch.compile'd step, and several scenario
#    programs; prints one line per check and fails if any check fails.
# 3. Runs tests/capture/test_other_interpreters.py with STEPSCOPE_EXTRA_PYTHONS set to the venv.
#
# Env: PYTHON310 (interpreter to build the venv from), OLD_VENV, TORCH_WHEEL, TORCH_INDEX_URL, STEPSCOPE_PY.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OLD_VENV="${OLD_VENV:-$ROOT/.cache/py310-torch21}"
STEPSCOPE_PY="${STEPSCOPE_PY:-$ROOT/.venv/bin/python}"
TORCH_VERSION=2.1.2

log() { printf 'check-old-torch: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

find_python310() {
  if [ -n "${PYTHON310:-}" ]; then echo "$PYTHON310"; return; fi
  # a pyenv shim is on PATH even when it cannot run: ask each candidate for its version
  for candidate in python3.10 "$HOME"/.pyenv/versions/3.10.*/bin/python /usr/bin/python3.10; do
    if "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 10))' >/dev/null 2>&1; then
      command -v "$candidate"; return
    fi
  done
  die "no Python 3.10 found; set PYTHON310"
}

build_venv() {
  local py pip
  py="$(find_python310)"
  log "creating $OLD_VENV from $py ($("$py" --version 2>&1))"
  "$py" -m venv "$OLD_VENV"
  pip=("$OLD_VENV/bin/python" -m pip install --disable-pip-version-check -q)
  if [ -n "${TORCH_INDEX_URL:-}" ]; then
    "${pip[@]}" --no-deps --index-url "$TORCH_INDEX_URL" "torch==$TORCH_VERSION+cpu"
  else
    "${pip[@]}" --no-deps "${TORCH_WHEEL:-torch==$TORCH_VERSION}"
  fi
  # pip says here that torch's nvidia-* and triton requirements are missing: expected, they come next (triton never)
  "${pip[@]}" filelock typing-extensions sympy networkx jinja2 fsspec "numpy<2"
  # The PyPI build links the CUDA runtime libraries: install the nvidia-* packages it pins.
  local nvidia
  nvidia="$("$OLD_VENV/bin/python" - <<'EOF'
import re
from importlib.metadata import requires
pins = []
for req in requires("torch") or []:
    m = re.match(r"\s*(nvidia-[A-Za-z0-9_.-]+)\s*\(?\s*(==\s*[^;)\s]+)", req)
    if m:
        pins.append(m.group(1) + m.group(2).replace(" ", ""))
print(" ".join(pins))
EOF
)"
  if [ -n "$nvidia" ] && [ -z "${TORCH_INDEX_URL:-}" ]; then
    log "installing the CUDA runtime packages torch loads at import: $nvidia"
    # shellcheck disable=SC2086
    "${pip[@]}" $nvidia
  fi
}

if ! "$OLD_VENV/bin/python" -c "import torch" >/dev/null 2>&1; then
  build_venv
fi
OLD_PY="$OLD_VENV/bin/python"
"$OLD_PY" -c "import platform, torch; print('check-old-torch: user interpreter: Python', platform.python_version(), 'torch', torch.__version__)" >&2 \
  || die "torch cannot be imported in $OLD_PY"
[ -x "$STEPSCOPE_PY" ] || die "no interpreter with stepscope at $STEPSCOPE_PY; set STEPSCOPE_PY"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
WS="$WORK/ws"
mkdir -p "$WS"
cp "$ROOT"/examples/*.py "$WS/"
cp -r "$ROOT/examples/scenarios" "$WS/scenarios"
git init -q "$WS"
cat > "$WS/serve.py" <<'EOF'
import torch

model = torch.nn.Linear(16, 4).eval()


def handle(request):
    x = torch.tensor(request, dtype=torch.float32)
    with torch.inference_mode():
        y = model(x)
    return y.argmax(-1).tolist()


for i in range(20):
    handle([[float(i)] * 16] * 8)
EOF
cat > "$WS/compiled.py" <<'EOF'
import torch

model = torch.compile(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)),
                      backend="aot_eager")
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i in range(12):
    model(torch.randn(8, 16)).sum().backward()
    opt.step()
    opt.zero_grad()
EOF

failures=0
# check NAME ARGS...: `stepscope profile ARGS --python OLD --json`, one summary line
check() {
  local name="$1"; shift
  local out="$WORK/$name.json" err="$WORK/$name.err" rc=0
  (cd "$WS" && "$STEPSCOPE_PY" -m stepscope profile "$@" --python "$OLD_PY" --json >"$out" 2>"$err") || rc=$?
  if [ "$rc" -ne 0 ]; then
    failures=$((failures + 1))
    printf '%-28s FAILED rc=%s: %s\n' "$name" "$rc" "$(tail -n 1 "$err")"
    return
  fi
  "$STEPSCOPE_PY" - "$name" "$out" <<'EOF'
import json, sys
name, path = sys.argv[1], sys.argv[2]
r = json.load(open(path))
lines = r["lines"]
top = max(lines, key=lambda e: e["wall_ms"]) if lines else None
extra = []
if any(e.get("shapes") for e in lines):
    extra.append("shapes")
if any(e.get("alloc_bytes") for e in lines):
    extra.append("memory")
if any(e["precision"] == "function" for e in lines):
    extra.append("stack frames")
compiled = r["scenario"].get("torch_compile", {}).get("compiled_step")
print(f"{name:<28} ok  {r['ms_per_step']:.3f} ms/step, {len(r['steps'])} steps, {len(lines)} lines"
      f" (top {top['line'] if top else '-'}), findings {[f['kind'] for f in r['findings']]}"
      + (f", {'+'.join(extra)}" if extra else "") + f", compiled step {compiled}")
EOF
}

check train_cpu               train_cpu.py
check train_cpu-shapes        train_cpu.py --shapes
check train_cpu-memory        train_cpu.py --memory
check train_cpu-stack         train_cpu.py --stack
check train_cpu-all-options   train_cpu.py --shapes --memory --stack
check function-step           serve.py --function handle
check compiled-step           compiled.py
for name in input_bound dominant_op unsteady_window startup_cost missing_label clean_mlp clean_conv; do
  line="$(grep -n '# the step$' "$WS/scenarios/$name.py" | cut -d: -f1)"
  check "scenario-$name" "scenarios/$name.py" --line "$line" --timeout 120
done
# the text report, as a user reads it
(cd "$WS" && "$STEPSCOPE_PY" -m stepscope profile train_cpu.py --python "$OLD_PY" --shapes --memory 2>/dev/null | head -n 30) \
  || { failures=$((failures + 1)); echo "text report FAILED"; }

log "pytest tests/capture/test_other_interpreters.py with STEPSCOPE_EXTRA_PYTHONS=$OLD_PY"
(cd "$ROOT" && STEPSCOPE_EXTRA_PYTHONS="$OLD_PY" "$STEPSCOPE_PY" -m pytest tests/capture/test_other_interpreters.py -q -rs) \
  || failures=$((failures + 1))

if [ "$failures" -ne 0 ]; then
  die "$failures check(s) failed"
fi
log "all checks passed"
