"""The profiler's distortion with a full capture and with a light one (`--light`), side by side, on
the same programs in the same session: a launch-bound step, a per-sample forward loop and a GPU-bound
block stack.

    python benchmarks/light_capture_gpu.py --out DIR [--rounds 3] [--quick]

Each round profiles every program twice, full then light (the order alternates by round), each in a
process of its own. A profile run times the step under the profiler (`ms_per_step`, the median of
the active steps) and, in the same process, after its window without it (`unprofiled.ms_per_step`);
their ratio is the run's distortion. Printed per program: the medians over rounds of both figures and
of the distortion for each capture, and what each capture attributed (lines with a figure, lines with
GPU time, kernels per step on lines). Every run's report is kept in OUT/NAME-MODE-ROUND.json. On a
machine without CUDA the programs run on the CPU: the figures are not the GPU's (the table says so).
`--quick` checks the script end to end (one round, short windows): its figures are no measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "benchmarks" / "gpu_cases"

LAUNCH_BOUND = '''\
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
layers = [torch.nn.Linear(64, 64) for _ in range(24)]
model = torch.nn.Sequential(*[m for layer in layers for m in (layer, torch.nn.ReLU())]).to(device)
opt = torch.optim.SGD(model.parameters(), lr=1e-3, foreach=False)
x = torch.randn(32, 64, device=device)
for step in range(STEPS):
    loss = model(x).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
'''


def programs(ws: Path, steps: int) -> list[tuple[str, list[str]]]:
    """(name, the `stepscope profile` arguments that name its program and step) for each program."""
    (ws / "launch_bound.py").write_text(LAUNCH_BOUND.replace("STEPS", str(steps)))
    for name in ("per_sample_forward.py", "common.py"):
        shutil.copy(CASES / name, ws / name)
    shutil.copy(REPO / "benchmarks" / "overhead_step.py", ws / "overhead_step.py")
    return [
        ("launch-bound step", ["launch_bound.py", "--line", "9"]),
        ("per-sample forward", ["per_sample_forward.py", "--line", "47", "--", "--variant", "loop",
                                "--steps", str(steps)]),
        ("block stack (GPU-bound)", ["overhead_step.py"]),
    ]


def profile(ws: Path, args: list[str], light: bool, window: list[str], python: str) -> dict:
    script, rest = args[0], args[1:]
    before, after = (rest[: rest.index("--")], rest[rest.index("--"):]) if "--" in rest else (rest, [])
    cmd = [python, "-m", "stepscope", "profile", script, *before, *window, "--json",
           *(["--light"] if light else []), *after]
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'server'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    r = subprocess.run(cmd, cwd=ws, capture_output=True, text=True, env=env, timeout=900)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    return json.loads(r.stdout)


def figures(report: dict) -> dict:
    unprofiled = (report.get("unprofiled") or {}).get("ms_per_step")
    profiled = report.get("ms_per_step")
    lines = report.get("lines") or []
    return {
        "profiled_ms": profiled,
        "unprofiled_ms": unprofiled,
        "distortion": profiled / unprofiled if profiled and unprofiled else None,
        "lines": len(lines),
        "lines_with_gpu": sum(1 for line in lines if (line.get("gpu_ms") or 0) > 0),
        "kernels_on_lines": sum(line.get("kernels") or 0 for line in lines if line.get("precision") == "exact"),
        "device": (report.get("machine") or {}).get("device"),
        "capture": ((report.get("scenario") or {}).get("observed") or {}).get("capture"),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--quick", action="store_true")
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rounds = 1 if a.quick else a.rounds
    window = ["--wait", "1", "--warmup", "1", "--active", "2"] if a.quick else ["--wait", "5", "--warmup", "5",
                                                                                 "--active", "20"]
    steps = 12 if a.quick else 80
    ws = Path(tempfile.mkdtemp(prefix="light-capture-"))
    seen: dict[tuple[str, str], list[dict]] = {}
    for name, args in programs(ws, steps):
        for k in range(rounds):
            for light in ((False, True) if k % 2 == 0 else (True, False)):
                mode = "light" if light else "full"
                report = profile(ws, args, light, window, a.python)
                slug = name.split()[0]
                (out / f"{slug}-{mode}-{k}.json").write_text(json.dumps(report))
                seen.setdefault((name, mode), []).append(figures(report))
    rows = []
    print(f"{'program':26} {'capture':8} {'profiled':>10} {'unprofiled':>11} {'distortion':>11} {'lines':>6} "
          f"{'w/ GPU':>7} {'kernels':>8}  device")
    for (name, mode), runs in seen.items():
        med = lambda key: statistics.median(r[key] for r in runs if r[key] is not None)  # noqa: E731
        row = {"program": name, "capture": mode, "runs": runs, "profiled_ms": med("profiled_ms"),
               "unprofiled_ms": med("unprofiled_ms"), "distortion": med("distortion"), "lines": med("lines"),
               "lines_with_gpu": med("lines_with_gpu"), "kernels_on_lines": med("kernels_on_lines")}
        rows.append(row)
        print(f"{name:26} {mode:8} {row['profiled_ms']:10.3f} {row['unprofiled_ms']:11.3f} {row['distortion']:10.2f}x "
              f"{row['lines']:6.0f} {row['lines_with_gpu']:7.0f} {row['kernels_on_lines']:8.0f}  {runs[0]['device']}")
    (out / "light_capture.json").write_text(json.dumps(rows, indent=1))
    shutil.rmtree(ws, ignore_errors=True)


if __name__ == "__main__":
    main()
