#!/usr/bin/env bash
# On a GPU machine: the framework steps (Lightning, HF Trainer, Accelerate), a launcher on the GPU,
# and public training programs, each profiled and measured, with the program's own per-step timer in
# its log to compare with (benchmarks/public_programs.py compares for the public programs; for the
# examples, `own step N: X ms` lines sit in each run's program.log, copied to OUT).
# Usage: OUT=dir CHECKOUTS=dir bash benchmarks/gpu_programs.sh   (from the repository root; CHECKOUTS
# holds karpathy+nanoGPT and karpathy+minGPT checkouts; without it the public programs are skipped)
set -uo pipefail
OUT=${OUT:-gpu-programs-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
PY=${PYTHON:-python3}
root=$PWD
export PYTHONPATH="$root/server${PYTHONPATH:+:$PYTHONPATH}"
ws=$(mktemp -d)
cp examples/*_tiny.py examples/train_ddp.py "$ws/"
git -C "$ws" init -q
cd "$ws"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  $PY -c 'import torch; print("torch", torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))'
  $PY -c 'import importlib.metadata as m
for p in ("lightning", "pytorch-lightning", "transformers", "accelerate"):
    try: print(p, m.version(p))
    except m.PackageNotFoundError: print(p, "absent")'
} > "$OUT/machine.txt" 2>&1

# run NAME STEPSCOPE-ARGS... : one stepscope command, its JSON, its text report and the program's log
run() {
  local name=$1; shift
  local started=$SECONDS
  $PY -m stepscope "$1" --json "${@:2}" > "$OUT/$name.json" 2> "$OUT/$name.err"  # --json before the program's `--`
  local code=$?
  echo "$name exit $code in $((SECONDS - started)) s: $*" >> "$OUT/summary.txt"
  local run_dir
  run_dir=$(ls -dt .stepscope/runs/* 2>/dev/null | head -1)
  [ -n "$run_dir" ] && cp "$run_dir/program.log" "$OUT/$name.program.log" 2>/dev/null
  if [ "$1" = profile ] && [ -n "$run_dir" ]; then
    $PY -m stepscope analyze "$run_dir" > "$OUT/$name.txt" 2>&1
  fi
}

run lightning profile lightning_tiny.py --function LitClassifier.training_step -- --device gpu
run lightning_accumulate profile lightning_tiny.py --function LitClassifier.training_step -- --device gpu --accumulate 4
run lightning_measure measure lightning_tiny.py --function LitClassifier.training_step --warmup 3 --passes 20 -- --device gpu
run hf profile hf_trainer_tiny.py --function transformers.trainer:Trainer.training_step -- --device cuda --accumulate 2
run hf_measure measure hf_trainer_tiny.py --function transformers.trainer:Trainer.training_step --warmup 3 --passes 10 -- --device cuda --accumulate 2
run accelerate profile accelerate_tiny.py -- --device cuda
run accelerate_measure measure accelerate_tiny.py --warmup 3 --passes 20 -- --device cuda
run accelerate_launch measure accelerate_tiny.py --launcher "accelerate launch --num_processes 1" --warmup 3 --passes 20 -- --device cuda
run torchrun_ddp profile train_ddp.py --launcher "torchrun --nproc-per-node 1"

if [ -n "${CHECKOUTS:-}" ]; then
  cd "$root"
  $PY benchmarks/public_programs.py --checkouts "$CHECKOUTS" --device cuda --only nanogpt,mingpt --python "$PY" --json "$OUT/public.json" \
    > "$OUT/public.txt" 2>&1
  echo "public programs exit $?" >> "$OUT/summary.txt"
fi
cat "$OUT/summary.txt"
