"""What a try costs beside `measure --against` with the same processes (docs/try.md).

Self-contained: it writes a small torch program into a temporary git repository, commits it, and
times, as a user runs them (`python -m stepscope ...`, wall clock of the whole command):
- `stepscope try prog.py --patch change.diff --runs R` (the change in a scratch copy; baseline in place)
- `stepscope measure prog.py --against HEAD --runs R` with the same change in the working tree
  (the revision in a git worktree)
both with the same warm-up and passes, alternating (A B, B A, ...) `--repeats` times, so that drift of
the machine favours neither. Each command runs 2 × R processes of the same program; the ratio of
their wall times is what a try costs over the measurement it shares with `measure --against`
(the claim of docs/try.md: at most about 2×; by construction about 1×). With `--demo` it
also times a try of the demo's input-bound finding, whose K variants share one baseline (K + 1
sides: about (K + 1) / 2 × an `--against` of the demo).

Prints a table and writes try_cost.json to OUT_DIR.

Usage: python benchmarks/try_cost.py OUT_DIR [--runs 2] [--repeats 3] [--passes 10] [--warmup 2] [--demo]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROGRAM = '''import time

import torch

torch.manual_seed(0)
model = torch.nn.Linear(64, 64)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(32, 64)
for step in range(200):
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    time.sleep(0.010)
'''
CHANGE = "--- a/prog.py\n+++ b/prog.py\n@@ -14 +14 @@\n-    time.sleep(0.010)\n+    time.sleep(0.008)\n"
REPO = Path(__file__).resolve().parent.parent


def git(ws: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(ws), "-c", "user.email=b@example.com", "-c", "user.name=bench", *args],
                   check=True, capture_output=True)


def timed(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr[-1500:]}")
    return took


def demo_finding(args, stepscope: list[str], ws: Path) -> dict:
    """The demo's input-bound finding tried (every variant) beside `measure --against` of the demo."""
    ws.mkdir()
    demo = (REPO / "examples" / "train_cpu.py").read_text()
    (ws / "train_cpu.py").write_text(demo)
    git(ws, "init", "-q")
    git(ws, "add", "train_cpu.py")
    git(ws, "commit", "-q", "-m", "the demo")
    made = subprocess.run([*stepscope, "profile", "train_cpu.py", "--json", "--", "--steps", "24"], cwd=ws,
                          capture_output=True, text=True)
    if made.returncode != 0:
        raise SystemExit(f"the demo's profile failed: {made.stderr[-1500:]}")
    report = json.loads(made.stdout)
    run = Path(report["traces"][0]).parent.name
    finding = next(f for f in report["findings"] if f["kind"] == "input-bound")
    options = ["--runs", str(args.runs), "--warmup", str(args.warmup), "--passes", str(args.passes), "--json"]
    tried, against = [], []
    for i in range(max(1, args.repeats // 2 + 1)):
        tried.append(timed([*stepscope, "try", run, "--finding", "input-bound", *options], ws))
        (ws / "train_cpu.py").write_text(demo.replace("def main() -> None:", "def main() -> None:  # edited"))
        against.append(timed([*stepscope, "measure", "train_cpu.py", "--against", "HEAD", *options, "--",
                              "--steps", "24"], ws))
        (ws / "train_cpu.py").write_text(demo)
        print(f"  demo try {tried[-1]:6.1f} s, demo against {against[-1]:6.1f} s", flush=True)
    return {"variants": len(finding["variants"]), "try_times_s": tried, "against_times_s": against,
            "try_s": statistics.median(tried), "against_s": statistics.median(against)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--passes", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--demo", action="store_true",
                    help="also time a try of the demo's input-bound finding (its variants, one baseline) beside a "
                         "measure --against of the demo with the same processes a side")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    options = ["--runs", str(args.runs), "--warmup", str(args.warmup), "--passes", str(args.passes), "--json"]
    stepscope = [sys.executable, "-m", "stepscope"]
    with tempfile.TemporaryDirectory(prefix="try-cost-") as tmp:
        try_ws, against_ws = Path(tmp) / "try", Path(tmp) / "against"
        for ws in (try_ws, against_ws):
            ws.mkdir()
            (ws / "prog.py").write_text(PROGRAM)
            git(ws, "init", "-q")
            git(ws, "add", "prog.py")
            git(ws, "commit", "-q", "-m", "the step")
        (try_ws / "change.diff").write_text(CHANGE)
        (against_ws / "prog.py").write_text(PROGRAM.replace("time.sleep(0.010)", "time.sleep(0.008)"))
        commands = {
            "try": ([*stepscope, "try", "prog.py", "--patch", "change.diff", *options], try_ws),
            "against": ([*stepscope, "measure", "prog.py", "--against", "HEAD", *options], against_ws),
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for i in range(args.repeats):
            order = list(commands) if i % 2 == 0 else list(reversed(commands))
            for name in order:
                cmd, cwd = commands[name]
                times[name].append(timed(cmd, cwd))
                print(f"  {name:<8} {times[name][-1]:6.1f} s", flush=True)
        several = None
        if args.demo:
            several = demo_finding(args, stepscope, Path(tmp) / "demo")
    med = {name: statistics.median(values) for name, values in times.items()}
    ratio = med["try"] / med["against"]
    doc = {"machine": {"host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version()},
           "options": vars(args) | {"out": str(args.out)}, "times_s": times, "median_s": med,
           "try_over_against": ratio,
           "demo": several}
    (args.out / "try_cost.json").write_text(json.dumps(doc, indent=2))
    print(f"\n{2 * args.runs} processes a command, {args.warmup} warm-up + {args.passes} passes each, "
          f"{args.repeats} repeats, on {doc['machine']['host']} ({doc['machine']['cpus']} CPUs)")
    print(f"  measure --against HEAD  median {med['against']:6.1f} s")
    print(f"  try --patch             median {med['try']:6.1f} s   ({ratio:.2f}x)")
    if several is not None:
        print(f"  demo: measure --against HEAD          median {several['against_s']:6.1f} s")
        print(f"  demo: try --finding input-bound ({several['variants']} variants, {several['variants'] + 1} sides)  "
              f"median {several['try_s']:6.1f} s   ({several['try_s'] / several['against_s']:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
