#!/usr/bin/env bash
# Verification of `stepscope profile --nproc N` with the nccl backend, on a machine with N GPUs.
# Usage: OUT=/some/folder NPROC=2 bash benchmarks/gpu_ddp.sh   (run from the repository root)
set -uo pipefail
OUT=${OUT:-gpu-ddp-out}
NPROC=${NPROC:-2}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD/server${PYTHONPATH:+:$PYTHONPATH}"
ws=$(mktemp -d)
cp examples/train_ddp.py "$ws/"
git -C "$ws" init -q
cd "$ws"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader > "$OUT/gpu.txt" 2>&1
$PY -c 'import torch, torch.distributed as d; print(torch.__version__, torch.cuda.device_count(), "GPUs, nccl", d.is_nccl_available())' >> "$OUT/gpu.txt" 2>&1

# 1. The plain script under torchrun: what the program does without Stepscope.
$PY -m torch.distributed.run --nproc_per_node "$NPROC" train_ddp.py > "$OUT/torchrun.log" 2>&1
echo "torchrun exit $?" >> "$OUT/gpu.txt"

# 2. The same script profiled on every rank: one trace per rank, one report.
$PY -m stepscope profile train_ddp.py --nproc "$NPROC" --json > "$OUT/ddp.json" 2> "$OUT/ddp.log"
echo "profile --nproc $NPROC exit $?" >> "$OUT/gpu.txt"
run=$(ls -d .stepscope/runs/*train_ddp* | tail -1)
ls -la "$run" > "$OUT/run-folder.txt"
$PY -m stepscope analyze "$run" > "$OUT/ddp.txt" 2>&1

# 3. Rank 1 crashes inside the window while rank 0 waits in an nccl all-reduce: the run must stop
#    rank 0 too and name rank 1, not hang.
$PY - <<'PY'
text = open("train_ddp.py").read().replace(
    "    for x, y in loader:\n",
    "    for i, (x, y) in enumerate(loader):\n"
    "        if i == 4 and dist.get_rank() == 1:\n"
    "            raise RuntimeError('rank 1 fails on purpose')\n")
open("crash_ddp.py", "w").write(text)
PY
timeout 300 $PY -m stepscope profile crash_ddp.py --nproc "$NPROC" --timeout 120 > "$OUT/crash.txt" 2>&1
echo "crashing rank exit $?" >> "$OUT/gpu.txt"
tar czf "$OUT/runs.tgz" .stepscope/runs
