#!/usr/bin/env bash
# Verification on a GPU machine: profiles the GPU example, a Lightning/torchvision run, and
# measures the overhead of Stepscope's per-line regions (same options, with and without them).
# Usage: OUT=/some/folder bash benchmarks/gpu_verify.sh   (run from the repository root)
set -uo pipefail
OUT=${OUT:-gpu-verify-out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD/server${PYTHONPATH:+:$PYTHONPATH}"
ws=$(mktemp -d)
cp examples/train_gpu.py examples/lightning_resnet.py "$ws/"
git -C "$ws" init -q
cd "$ws"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt" 2>&1
$PY -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))' >> "$OUT/gpu.txt" 2>&1

# 1. The GPU example, default options.
$PY -m stepscope profile train_gpu.py --json > "$OUT/train_gpu.json" 2> "$OUT/train_gpu.log"
echo "train_gpu exit $?" >> "$OUT/gpu.txt"
$PY -m stepscope analyze "$(ls -d .stepscope/runs/*train_gpu* | tail -1)" >> "$OUT/train_gpu.txt" 2>&1

# 1b. The same step with the model compiled (inductor: Triton kernels, compiled regions).
$PY -m stepscope profile train_gpu.py --warmup 3 --json -- --compile > "$OUT/train_gpu_compiled.json" 2> "$OUT/train_gpu_compiled.log"
echo "train_gpu --compile exit $?" >> "$OUT/gpu.txt"
$PY -m stepscope analyze "$(ls -d .stepscope/runs/*train_gpu* | tail -1)" >> "$OUT/train_gpu_compiled.txt" 2>&1

# 2. Overhead of the per-line regions: alternate with/without, 3 runs each, 20 active steps.
for i in 1 2 3; do
  for mode in lines nolines; do
    flag=""; [ $mode = nolines ] && flag="--no-line-regions"
    $PY -m stepscope profile train_gpu.py --active 20 --warmup 5 $flag --json 2>/dev/null \
      | $PY -c "import json,sys; r=json.load(sys.stdin); print('$mode', r['ms_per_step'])" >> "$OUT/overhead.txt"
  done
done

# 3. Lightning + torchvision ResNet-18, the step being Lightning's training_step hook.
$PY -m stepscope profile lightning_resnet.py --function training_step --json > "$OUT/lightning.json" 2> "$OUT/lightning.log"
echo "lightning exit $?" >> "$OUT/gpu.txt"
$PY -m stepscope analyze "$(ls -d .stepscope/runs/*lightning* | tail -1)" >> "$OUT/lightning.txt" 2>&1
tar czf "$OUT/runs.tgz" .stepscope/runs
