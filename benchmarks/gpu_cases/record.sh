#!/usr/bin/env bash
# Runs every GPU case on a GPU machine: a Stepscope profile of each (compiled cases with Inductor's
# provenance records and torch's structured compile logs), and the hand timings of each variant.
# Usage (from the repository root): OUT=/some/folder bash benchmarks/gpu_cases/record.sh
set -uo pipefail
OUT=${OUT:-gpu-cases-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD/server${PYTHONPATH:+:$PYTHONPATH}"
ws=$(mktemp -d)
cp benchmarks/gpu_cases/*.py "$ws/"
git -C "$ws" init -q
cd "$ws"
mkdir -p runs
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  $PY -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))'; } > "$OUT/machine.txt" 2>&1

profile() {  # NAME CASE VARIANT [stepscope options...]
  local name=$1 case=$2 variant=$3; shift 3
  local start=$SECONDS line
  line=$(grep -n "for i in range(args.steps)" "$case.py" | cut -d: -f1)  # the training loop
  $PY -m stepscope profile "$case.py" --line "$line" --out "runs/$name" --json "$@" -- --variant "$variant" \
      > "runs/$name.json" 2> "runs/$name.log"
  echo "$name exit $? ($((SECONDS - start)) s)" >> "$OUT/summary.txt"
  $PY -m stepscope analyze "runs/$name" > "runs/$name/report.txt" 2>&1
}

profile const_rebuilt const_copy rebuilt
profile const_hoisted const_copy hoisted
profile syncs sync_every_step syncs
profile nosyncs sync_every_step nosyncs
profile read_slow read_in_step slow
profile read_prepared read_in_step prepared
profile graph_eager cuda_graph eager
profile graph_replay cuda_graph graph
profile mlp_eager compiled_mlp eager
profile block_eager compiled_block eager
export INDUCTOR_PROVENANCE=1
TORCH_TRACE="$ws/torch_trace/mlp" profile mlp_compiled compiled_mlp compiled --wait 2 --warmup 4
TORCH_TRACE="$ws/torch_trace/block" profile block_compiled compiled_block default --wait 2 --warmup 4
TORCH_TRACE="$ws/torch_trace/block_ro" profile block_reduce_overhead compiled_block reduce-overhead --wait 3 --warmup 5
unset INDUCTOR_PROVENANCE

for cv in "const_copy rebuilt" "const_copy hoisted" "sync_every_step syncs" "sync_every_step nosyncs" \
          "read_in_step slow" "read_in_step prepared" \
          "cuda_graph eager" "cuda_graph graph" "compiled_mlp eager" "compiled_mlp compiled" \
          "compiled_block eager" "compiled_block default" "compiled_block reduce-overhead"; do
  $PY handtime.py $cv >> "$OUT/handtime.jsonl" 2>> "$OUT/handtime.err"
done
# Everything in one archive: a machine that hands back only a few files still returns it all.
tar czf "$OUT/cases.tgz" runs torch_trace 2>/dev/null
ls -la "$OUT" >> "$OUT/summary.txt"
