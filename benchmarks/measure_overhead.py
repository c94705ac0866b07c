"""Does `stepscope measure` add a per-step cost? A launch-heavy step timed by hand vs by measure.

Self-contained: writes a small program into a temporary folder whose step is hundreds of tiny
operators (host-bound, as a launch-bound GPU step is), then alternates whole processes:
- hand:    the program itself times `--passes` steps after `--warmup` (one synchronise at the start
           and end on a GPU, the host clock on the CPU) and prints ms/step (the mean of those steps);
- measure: `python -m stepscope measure` of the same program, same warm-up and passes; its mean
           (total of the passes / passes) and its median; and, in the same process, the program's
           own hand timer over the same steps (the first passes − 1 of them), which says whether
           measure's clock reads the steps as the wall clock does.
A B A B … for `--processes` pairs. Prints every process's figure, then measure/hand as a ratio of
the medians over processes, with the spread of the per-pair ratios and of each side's processes
(process-to-process spread): a per-step cost shows as a ratio above 1 beyond that spread.
Then measure's own cost per step, directly: `stepscope measure` of a loop whose step does nothing
(the median pass is the agent's boundary: clock, event, value capture), as a share of the hand step.

Usage: python benchmarks/measure_overhead.py [--processes 5] [--warmup 10] [--passes 30]
       [--tensors 400] [--cpu] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

PROGRAM = textwrap.dedent('''
    import argparse, json, time
    import torch

    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--hand", type=int, default=0)
    p.add_argument("--hand-warmup", type=int, default=10)
    p.add_argument("--tensors", type=int, default=400)
    p.add_argument("--cpu", action="store_true")
    args = p.parse_args()
    device = torch.device("cpu" if args.cpu or not torch.cuda.is_available() else "cuda")
    params = [torch.randn(256, device=device) for _ in range(args.tensors)]
    grads = [torch.randn(256, device=device) for _ in params]


    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()


    def step():
        for weight, grad in zip(params, grads):
            weight.mul_(0.999).add_(grad, alpha=1e-3)
        return params[0].sum()


    start = None
    for i in range(args.steps):  # the step loop
        if args.hand and i == args.hand_warmup:
            sync()
            start = time.perf_counter()
        if args.hand and i == args.hand_warmup + args.hand:
            sync()
            print(json.dumps({"hand_ms": (time.perf_counter() - start) * 1000 / args.hand}), flush=True)
            break
        loss = step()
''')


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--passes", type=int, default=30)
    ap.add_argument("--tensors", type=int, default=400)
    ap.add_argument("--cpu", action="store_true", help="run the step on the CPU even where CUDA is present")
    ap.add_argument("--json", help="write every figure to this file")
    args = ap.parse_args()

    ws = Path(tempfile.mkdtemp(prefix="measure-overhead-"))
    program = ws / "launch.py"
    program.write_text(PROGRAM)
    line = next(i for i, t in enumerate(PROGRAM.splitlines(), 1) if "# the step loop" in t)
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'server'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    steps = args.warmup + args.passes + 5
    extra = ["--tensors", str(args.tensors)] + (["--cpu"] if args.cpu else [])

    def hand() -> float:
        out = subprocess.run([sys.executable, str(program), "--steps", str(steps), "--hand", str(args.passes),
                              "--hand-warmup", str(args.warmup), *extra], cwd=ws, env=env, capture_output=True,
                             text=True, check=True).stdout
        return json.loads(out.strip().splitlines()[-1])["hand_ms"]

    def measure() -> tuple[float, float, float, float]:
        # the program also times passes - 1 steps itself, from the first measured one (it prints
        # before the boundary that ends the measurement)
        r = subprocess.run([sys.executable, "-m", "stepscope", "measure", str(program), "--line", str(line),
                            "--warmup", str(args.warmup), "--passes", str(args.passes), "--json", "--",
                            "--steps", str(steps), "--hand", str(args.passes - 1), "--hand-warmup", str(args.warmup),
                            *extra], cwd=ws, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"stepscope measure failed ({r.returncode}): {r.stderr.strip()[-300:]}")
        d = json.loads(r.stdout)
        raw = d["raw_ms"]
        log = (Path(d["run_dir"]) / "program.log").read_text()
        inside = json.loads(next(t for t in log.splitlines() if t.startswith('{"hand_ms"')))["hand_ms"]
        return statistics.fmean(raw), d["median_ms"], inside, statistics.fmean(raw[: args.passes - 1])

    rows = []
    for k in range(args.processes):
        order = ("hand", "measure") if k % 2 == 0 else ("measure", "hand")
        row = {}
        for side in order:
            if side == "hand":
                row["hand_ms"] = hand()
            else:
                (row["measure_mean_ms"], row["measure_median_ms"], row["inside_hand_ms"],
                 row["inside_measure_ms"]) = measure()
        rows.append(row)
        print(f"pair {k + 1}: hand {row['hand_ms']:.3f} ms/step   measure mean {row['measure_mean_ms']:.3f}, "
              f"median {row['measure_median_ms']:.3f}   ratio (mean/hand) {row['measure_mean_ms'] / row['hand_ms']:.3f}"
              f"   same process: measure {row['inside_measure_ms']:.3f} vs the program's timer "
              f"{row['inside_hand_ms']:.3f} ({row['inside_measure_ms'] / row['inside_hand_ms']:.3f})", flush=True)

    def spread(values: list[float]) -> str:
        m = statistics.median(values)
        return f"{min(values) / m - 1:+.1%} .. {max(values) / m - 1:+.1%}"

    hands = [r["hand_ms"] for r in rows]
    means = [r["measure_mean_ms"] for r in rows]
    medians = [r["measure_median_ms"] for r in rows]
    pair_ratios = [r["measure_mean_ms"] / r["hand_ms"] for r in rows]
    summary = {
        "device": "cpu" if args.cpu else "cuda if available",
        "processes_per_side": args.processes, "warmup": args.warmup, "passes": args.passes, "tensors": args.tensors,
        "hand_ms_median": statistics.median(hands), "measure_mean_ms_median": statistics.median(means),
        "measure_median_ms_median": statistics.median(medians),
        "ratio_mean_over_hand": statistics.median(means) / statistics.median(hands),
        "ratio_median_over_hand": statistics.median(medians) / statistics.median(hands),
        "pair_ratios": pair_ratios, "rows": rows,
        "same_process_ratios": [r["inside_measure_ms"] / r["inside_hand_ms"] for r in rows],
    }
    print(f"\nhand (median of {args.processes} processes): {summary['hand_ms_median']:.3f} ms/step, "
          f"process-to-process spread {spread(hands)}")
    print(f"measure mean per pass:   {summary['measure_mean_ms_median']:.3f} ms/step, spread {spread(means)}")
    print(f"measure median per pass: {summary['measure_median_ms_median']:.3f} ms/step, spread {spread(medians)}")
    print(f"ratio measure(mean)/hand: {summary['ratio_mean_over_hand']:.3f}   "
          f"measure(median)/hand: {summary['ratio_median_over_hand']:.3f}   "
          f"per-pair ratios {min(pair_ratios):.3f} .. {max(pair_ratios):.3f}")
    same = summary["same_process_ratios"]
    print(f"same process, same steps: measure / the program's own timer {statistics.median(same):.4f} "
          f"({min(same):.4f} .. {max(same):.4f})")
    empty = ws / "empty.py"
    # CUDA initialised (where the program may use it) so that the boundary records its CUDA event
    empty.write_text("import torch\n"
                     f"if torch.cuda.is_available() and not {args.cpu}:\n    torch.zeros(1, device='cuda')\n"
                     "for i in range(100000):  # the step loop\n    loss = i\n")
    own = []
    for _ in range(3):
        r = subprocess.run([sys.executable, "-m", "stepscope", "measure", str(empty), "--line", "4", "--warmup", "50",
                            "--passes", "500", "--json"], cwd=ws, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"stepscope measure failed ({r.returncode}): {r.stderr.strip()[-300:]}")
        doc = json.loads(r.stdout)
        own.append(doc["median_ms"])
        own_clock = "CUDA events" if "CUDA" in (doc.get("clock") or "") else "host clock"
    summary["agent_cost_per_step_us"] = statistics.median(own) * 1000
    summary["agent_cost_share_of_hand_step"] = statistics.median(own) / summary["hand_ms_median"]
    print(f"measure's own cost per step (an empty step, median of 500 passes, 3 processes; {own_clock}): "
          f"{summary['agent_cost_per_step_us']:.1f} us = {summary['agent_cost_share_of_hand_step']:.2%} of the hand step")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
