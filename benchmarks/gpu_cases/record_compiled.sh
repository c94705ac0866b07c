#!/usr/bin/env bash
# Compiled code on its lines, on a GPU machine (about 5 to 8 minutes on one H200): profiles the
# compiled MLP, the compiled transformer block (default and reduce-overhead) and the hand-captured
# CUDA graph with their eager twins, every workspace line split (--depth 4: the model's own
# statements sit 3 calls below the loop), then prints per-line GPU time eager against compiled
# (compare_lines.py) and the cost of taking the compiler's records (the compiled MLP again with
# --no-compile-records: compile time in start-up, ms/step), and dynamo's counters of each compiled case
# run without Stepscope beside its profile's (dynamo_plain.py: they must be the same).
# Usage (from the repository root): OUT=/some/folder bash benchmarks/gpu_cases/record_compiled.sh
# Writes $OUT/compare.txt, $OUT/dynamo.txt, $OUT/summary.txt, $OUT/machine.txt and $OUT/compiled-runs.tgz (the run folders).
set -uo pipefail
OUT=${OUT:-gpu-compiled-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD/server${PYTHONPATH:+:$PYTHONPATH}"
here="$PWD/benchmarks/gpu_cases"
ws=$(mktemp -d)
cp "$here"/*.py "$ws/"
git -C "$ws" init -q
cd "$ws"
mkdir -p runs
export TORCHINDUCTOR_CACHE_DIR="$ws/inductor-cache"  # every compiled case compiles from scratch, here
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  $PY -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))'; } > "$OUT/machine.txt" 2>&1

profile() {  # NAME CASE VARIANT [stepscope options...]
  local name=$1 case=$2 variant=$3; shift 3
  local start=$SECONDS line
  line=$(grep -n "for i in range(args.steps)" "$case.py" | cut -d: -f1)  # the training loop
  $PY -m stepscope profile "$case.py" --line "$line" --depth 4 --out "runs/$name" --json "$@" -- --variant "$variant" \
      > "runs/$name.json" 2> "runs/$name.log"
  echo "$name exit $? ($((SECONDS - start)) s)" >> "$OUT/summary.txt"
  $PY -m stepscope analyze "runs/$name" > "runs/$name/report.txt" 2>&1
}

profile mlp_eager compiled_mlp eager
profile mlp_compiled compiled_mlp compiled --wait 2 --warmup 4
profile block_eager compiled_block eager
profile block_compiled compiled_block default --wait 2 --warmup 4
profile block_reduce_overhead compiled_block reduce-overhead --wait 3 --warmup 5
profile graph_eager cuda_graph eager
profile graph_replay cuda_graph graph
rm -rf "$TORCHINDUCTOR_CACHE_DIR"  # the same compile again, from scratch, without the records
profile mlp_compiled_norecords compiled_mlp compiled --wait 2 --warmup 4 --no-compile-records

{
  for pair in "mlp_eager mlp_compiled" "block_eager block_compiled" "block_eager block_reduce_overhead" \
              "graph_eager graph_replay"; do
    set -- $pair
    echo "== $1 vs $2"
    $PY "$here/compare_lines.py" "runs/$1" "runs/$2" 2>&1
    echo
  done
  echo "== the compiler's records: their cost (compiled MLP, compiled from scratch each time)"
  for name in mlp_compiled mlp_compiled_norecords; do
    $PY - "runs/$name/report.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["startup"]
print(f"{sys.argv[1].split('/')[1]:<24} ms/step {r['ms_per_step']:.3f}  to first step {s['to_first_step_ms']:.0f} ms  "
      f"first steps (compiling) {[round(x) for x in s['first_steps_ms']]} ms")
EOF
  done
} > "$OUT/compare.txt" 2>&1
cat "$OUT/compare.txt"

# Stepscope's own labels must not make Dynamo break a graph or fall back to eager: each compiled case
# run without Stepscope (as many steps as its profile's window), dynamo's counters beside the profile's
echo "== dynamo's counters without Stepscope and under it (must say: same)" > "$OUT/dynamo.txt"
for spec in "compiled_mlp compiled 11 mlp_compiled" "compiled_block default 11 block_compiled" \
            "compiled_block reduce-overhead 13 block_reduce_overhead"; do
  set -- $spec
  $PY "$here/dynamo_plain.py" "$1" "$2" "$3" "runs/$4" >> "$OUT/dynamo.txt" 2>> "$OUT/dynamo.err"
done
cat "$OUT/dynamo.txt"
tar czf "$OUT/compiled-runs.tgz" runs 2>/dev/null
ls -la "$OUT" >> "$OUT/summary.txt"
