#!/usr/bin/env bash
# Verification of `stepscope profile --nproc N` and `--launcher` with the nccl backend, on a machine
# with N GPUs (N >= 2).
# Usage: OUT=/some/folder NPROC=2 bash benchmarks/gpu_ddp.sh   (run from the repository root)
# What to look for, in $OUT:
# - gpu.txt: every exit 0 except "crashing rank exit 3";
# - ddp.txt / launcher.txt: one trace per rank, every rank's ms/step and GPU time, time in NCCL
#   kernels, no rank-imbalance finding; "clocks: one host" and a check that holds (NCCL kernels);
# - straggler.txt: rank 1 the slowest, named by the rank-imbalance finding, late_ms near 0 on rank 1
#   and about the planted 20 ms per step on the others (they wait in the all-reduce);
# - nodes.txt: two "nodes" (one GPU each) joined through c10d: two nodes in the report, one host;
# - crash.txt: rank 1 named, the other rank stopped, no hang.
set -uo pipefail
OUT=${OUT:-gpu-ddp-out}
NPROC=${NPROC:-2}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)  # absolute: the script works in a temporary folder
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
# 4. The same run through --launcher: torchrun as the user would type it.
$PY -m stepscope profile train_ddp.py --launcher "$PY -m torch.distributed.run --nproc-per-node $NPROC" \
  > "$OUT/launcher.txt" 2>&1
echo "profile --launcher exit $?" >> "$OUT/gpu.txt"

# 5. A straggler: rank 1 sleeps 20 ms in each step before its forward (input-bound); the others
#    wait for it in the all-reduce.
$PY - <<'PY'
text = open("train_ddp.py").read().replace(
    "    for x, y in loader:\n",
    "    import time\n"
    "    for x, y in loader:\n"
    "        if dist.get_rank() == 1:\n"
    "            time.sleep(0.02)\n")
open("straggler_ddp.py", "w").write(text)
PY
$PY -m stepscope profile straggler_ddp.py --nproc "$NPROC" --json > "$OUT/straggler.json" 2> "$OUT/straggler.log"
echo "straggler exit $?" >> "$OUT/gpu.txt"
$PY -m stepscope analyze "$(ls -d .stepscope/runs/*straggler_ddp* | tail -1)" > "$OUT/straggler.txt" 2>&1

# 6. Two "nodes" of one GPU each, joined through c10d rendezvous on this host, each started by hand
#    from one prepared run folder, as a job script starts torchrun on every node.
port=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
$PY -m stepscope profile train_ddp.py --prepare --json --launcher \
  "$PY -m torch.distributed.run --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:$port" \
  > "$OUT/prepared.json" 2>> "$OUT/gpu.txt"
cmd=$($PY -c 'import json, shlex, sys; print(shlex.join(json.load(open(sys.argv[1]))["command"]))' "$OUT/prepared.json")
CUDA_VISIBLE_DEVICES=0 timeout 300 bash -c "$cmd" > "$OUT/node0.log" 2>&1 &
node0_pid=$!
CUDA_VISIBLE_DEVICES=1 timeout 300 bash -c "$cmd" > "$OUT/node1.log" 2>&1
node1=$?
wait "$node0_pid"
echo "two nodes exit $? $node1" >> "$OUT/gpu.txt"
run=$($PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["run_dir"])' "$OUT/prepared.json")
$PY -m stepscope analyze "$run" > "$OUT/nodes.txt" 2>&1
$PY -m stepscope analyze "$run" --json > "$OUT/nodes.json" 2>> "$OUT/gpu.txt"

tar czf "$OUT/runs.tgz" .stepscope/runs
