"""Profile every scenario with `stepscope profile` and bundle the run folders.

    python examples/scenarios/capture_all.py OUT_DIR [--only NAME ...]

Each scenario's step loop is the line marked `# the step`. On a machine with CUDA,
`gpu_not_observed.py` is profiled with `--cpu-only` (its point). Writes `OUT_DIR/<name>/` (the run
folder), `OUT_DIR/plain_profiler/trace.json` (a trace recorded
with torch.profiler directly), `OUT_DIR/summary.json` (exit code and finding kinds per scenario) and prints the summary.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCENARIOS = ["input_bound", "repeated_copy", "small_launches", "dominant_op", "sync_in_step", "startup_cost",
             "unsteady_window", "missing_label", "gpu_not_observed", "clean_mlp", "clean_conv"]


def step_line(path: Path) -> int:
    for n, text in enumerate(path.read_text().splitlines(), 1):
        if text.rstrip().endswith("# the step"):
            return n
    raise SystemExit(f"{path}: no line marked '# the step'")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        import torch
        cuda = torch.cuda.is_available()
    except ImportError:
        cuda = False
    summary = {}
    for name in [n for n in (args.only or SCENARIOS) if n in SCENARIOS]:
        script = HERE / f"{name}.py"
        cmd = [sys.executable, "-m", "stepscope", "profile", str(script), "--line", str(step_line(script)),
               "--out", str(args.out / name), "--json", "--timeout", "120"]
        if cuda and name == "gpu_not_observed":
            cmd.append("--cpu-only")
        done = subprocess.run(cmd, capture_output=True, text=True)
        entry: dict = {"rc": done.returncode}
        if done.returncode == 0:
            report = json.loads(done.stdout)
            entry["findings"] = [f["kind"] for f in report["findings"]]
            entry["ms_per_step"] = report["ms_per_step"]
        else:
            entry["stderr"] = done.stderr[-2000:]
        summary[name] = entry
        print(name, json.dumps(entry), flush=True)
    if args.only is None or "plain_profiler" in args.only:
        # a trace Stepscope did not record: torch.profiler used directly, with Python stacks
        folder = args.out / "plain_profiler"
        folder.mkdir(exist_ok=True)
        done = subprocess.run([sys.executable, str(HERE / "plain_profiler.py"), str(folder / "trace.json")],
                              capture_output=True, text=True)
        summary["plain_profiler"] = {"rc": done.returncode, "stderr": done.stderr[-2000:]}
        print("plain_profiler", json.dumps({"rc": done.returncode}), flush=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
