#!/usr/bin/env bash
# ms/step of a GPU-bound training step profiled with and without Stepscope's per-line regions,
# same options, alternating, 4 runs each; prints each run and the ratio of the medians.
# Usage (repository root, on a GPU machine): bash benchmarks/gpu_overhead.sh
set -euo pipefail
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD/server${PYTHONPATH:+:$PYTHONPATH}"
ws=$(mktemp -d); cp benchmarks/overhead_step.py "$ws/"; cd "$ws"
for i in 1 2 3 4; do
  for mode in lines none; do
    flag=""; [ $mode = none ] && flag="--no-line-regions"
    $PY -m stepscope profile overhead_step.py --wait 5 --warmup 5 --active 30 $flag --json 2>/dev/null \
      | $PY -c "import json,sys; r=json.load(sys.stdin); print('$mode', r['ms_per_step'])"
  done
done | tee runs.txt
$PY - <<'PY'
import statistics
runs = {}
for line in open("runs.txt"):
    mode, ms = line.split()
    runs.setdefault(mode, []).append(float(ms))
a, b = statistics.median(runs["lines"]), statistics.median(runs["none"])
print(f"median ms/step with line regions {a:.3f}, without {b:.3f}: ratio {a / b:.3f}")
PY
