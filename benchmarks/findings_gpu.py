"""Findings against the real cost, on a GPU machine: each case of benchmarks/gpu_cases has a variant with
a problem and one without it.

    python benchmarks/findings_gpu.py --out DIR [--only NAME ...] [--python EXE] [--quick]

For each case:
1. the real cost, measured outside the profiler: both variants timed by hand (`handtime.py`: warm-up,
   then N steps with one synchronise at the end, five repeats; medians), cost = (with - without) / with;
2. `stepscope profile` of the variant with the problem, and of the one without;
3. the verdict: the expected finding on the expected line (named by its code), and none of that kind on
   the variant without the problem; for `sync-in-step`, the severity the real cost calls for (a warning
   when it is at least 5% of the step, either within 2 points of that) and a bound on what the waits can cost that holds (at least the
   measured cost, less 2 points of noise).

Prints a table (program | real cost | finding | its line | right?), writes OUT/findings_gpu.json with
every figure (and each trace's compressed size: a frozen trace must stay under
tests/analysis/gpu_cases.py's MAX_BYTES), and keeps each run folder in OUT/runs/NAME (and OUT/cases.tgz
with all of them), so they can be frozen into the test data:

    python -m tests.analysis.gpu_cases OUT/runs augment_host per_sample wrapped sync_real

(then add the programs' digests to tests/data/recorded_programs.json). OUT must not hold an earlier
run. On a machine without CUDA the programs run on the CPU and the verdicts are not the GPU's: the
kernel and GPU-idle findings cannot show there (the table says so). `--quick` checks that the script
runs end to end (a few steps per timing and per profile, a short profile window): its figures are no
measurement.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CASES_DIR = REPO / "benchmarks" / "gpu_cases"
#: below this share of the step the waits cost too little for a warning (the finding's sync-min-share)
WARNING_SHARE = 0.05
#: the measured cost may exceed the finding's bound by this much (hand timings' noise)
NOISE = 0.02
#: the profile window of every run: short, so the traces stay small enough to freeze
WINDOW = ("--active", "3")
#: `--quick`: the hand timings' and the programs' steps, and a window that fits in them
QUICK_TIMING = ("--steps", "2", "--warmup", "1")
QUICK_PROGRAM = ("--steps", "6")
QUICK_WINDOW = ("--wait", "0", "--warmup", "1", "--active", "3")


@dataclass(frozen=True)
class Case:
    name: str  # the run's name (and its folder in OUT/runs)
    program: str  # a file of benchmarks/gpu_cases
    bad: str  # the variant with the problem
    good: str  # the variant without it
    kind: str  # the finding expected on `bad`
    codes: tuple[str, ...]  # the code of the line it must name (any of them)
    not_codes: tuple[str, ...] = ()  # lines it must not name (where the work only passes through)
    options: tuple[str, ...] = field(default=())  # more `stepscope profile` options


CASES = (
    Case("augment_host", "augment_in_step", "host", "device", "host-bound", ("for img in images:",),
         not_codes=("x = augment(x, rng)",)),
    Case("per_sample", "per_sample_forward", "loop", "batched", "small-launches",
         ("h = torch.stack([torch.relu(self.hidden(row)) for row in x])",), not_codes=("loss.backward()",)),
    Case("sync_real", "sync_every_step", "syncs", "nosyncs", "sync-in-step",
         ('seen["loss"] += loss.item()', 'seen["correct"] += int((logits.argmax(1).cpu() == y.cpu()).sum())')),
    Case("wrapped", "wrapped_step", "wrapped", "prepared", "host-bound",
         ("x = torch.stack([(r - r.mean()) / (r.std() + 1e-5) for r in x])",),
         not_codes=("with torch.no_grad():", "with torch.autocast(amp, dtype=torch.bfloat16):")),
    Case("wrapped_compiled", "wrapped_step", "compiled", "prepared", "host-bound",
         ("x = torch.stack([(r - r.mean()) / (r.std() + 1e-5) for r in x])",),
         not_codes=("with torch.no_grad():", "with torch.autocast(amp, dtype=torch.bfloat16):"),
         options=("--wait", "2", "--warmup", "4")),
)


def line_of(path: Path, code: str) -> int | None:
    return next((i for i, text in enumerate(path.read_text().splitlines(), 1) if text.strip() == code), None)


def hand_time(ws: Path, python: str, case: Case, variant: str, quick: bool) -> float | None:
    out = subprocess.run([python, "handtime.py", case.program, variant, *(QUICK_TIMING if quick else ())], cwd=ws,
                         capture_output=True, text=True)
    if out.returncode != 0:
        print(f"{case.program} {variant}: the hand timing exited {out.returncode}: {out.stderr.strip()[-500:]}",
              file=sys.stderr)
        return None
    return float(json.loads(out.stdout.strip().splitlines()[-1])["median"])


def profile(ws: Path, python: str, case: Case, variant: str, name: str, quick: bool) -> dict | None:
    loop = line_of(ws / f"{case.program}.py", "for i in range(args.steps):")
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'server'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    # the quick window comes last: the last of a repeated option wins
    window = [*WINDOW, *case.options, *(QUICK_WINDOW if quick else ())]
    program = ["--variant", variant, *(QUICK_PROGRAM if quick else ())]
    r = subprocess.run([python, "-m", "stepscope", "profile", f"{case.program}.py", "--line", str(loop),
                        "--out", f"runs/{name}", "--json", *window, "--", *program],
                       cwd=ws, capture_output=True, text=True, env=env)
    (ws / "runs" / f"{name}.log").write_text(r.stderr)
    if r.returncode != 0:
        print(f"{name}: stepscope profile exited {r.returncode}: {r.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return json.loads(r.stdout)


def of_kind(report: dict | None, kind: str) -> list[dict]:
    return [f for f in (report or {}).get("findings") or [] if f["kind"] == kind]


def verdict(case: Case, ws: Path, bad: dict | None, good: dict | None, cost: float, gpu: bool) -> tuple[str, str, str]:
    """(the finding as found, its line, right or wrong and why)."""
    path = ws / f"{case.program}.py"
    expected = {line_of(path, code) for code in case.codes}
    forbidden = {line_of(path, code) for code in case.not_codes}
    found = of_kind(bad, case.kind)
    if bad is None:
        return "-", "-", "wrong: the profile failed"
    if not found:
        fired = ", ".join(f"{f['kind']}@{f['line']}" for f in bad.get("findings") or []) or "none"
        return "-", "-", f"wrong: no {case.kind} (fired: {fired})" + ("" if gpu else " [CPU run]")
    f = found[0]
    shown = f"{f['kind']} ({f['severity']})"
    where = f"{Path(f['file']).name}:{f['line']}" if f.get("file") else "no line"
    problems = []
    if f.get("line") not in expected:
        problems.append("not the expected line" + (" (a line the work only passes through)"
                                                   if f.get("line") in forbidden else ""))
    if of_kind(good, case.kind):
        problems.append(f"{case.kind} also fires without the problem")
    if case.kind == "sync-in-step":
        # within the hand timings' noise of the threshold either severity is right
        want = "warning" if cost >= WARNING_SHARE + NOISE else "info" if cost < WARNING_SHARE - NOISE else None
        if want is not None and f["severity"] != want:
            problems.append(f"severity {f['severity']}, the real cost calls for {want}")
        bound = (f.get("figures") or {}).get("most_saved_share")
        if bound is None:
            problems.append("no bound from the step timed without the profiler")
        elif bound + NOISE < cost:
            problems.append(f"its bound {bound:.0%} is below the measured cost")
        else:
            shown += f", at most {bound:.0%}"
    return shown, where, "right" if not problems else "wrong: " + "; ".join(problems)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="a new or empty folder for the table's figures and the "
                                                               "run folders (traces)")
    p.add_argument("--only", nargs="*", choices=[c.name for c in CASES], help="run only these cases")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--quick", action="store_true", help="a few steps per timing and profile: checks that the "
                                                        "script runs, measures nothing")
    args = p.parse_args()
    out = args.out.resolve()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        p.exit(2, f"findings_gpu: {out} already holds something (an earlier run?): give a new or empty folder\n")
    (out / "runs").mkdir(parents=True, exist_ok=True)
    ws = Path(tempfile.mkdtemp(prefix="findings-gpu-"))
    for program in CASES_DIR.glob("*.py"):
        shutil.copy(program, ws / program.name)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "runs").mkdir()
    probe = subprocess.run([args.python, "-c", "import torch; print(torch.cuda.is_available(), torch.__version__, "
                            "torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'CPU')"],
                           capture_output=True, text=True, check=True).stdout.split(maxsplit=2)
    gpu = probe[0] == "True"
    machine = f"{probe[2].strip()}, torch {probe[1]}"
    rows = []
    for case in CASES:
        if args.only and case.name not in args.only:
            continue
        with_it = hand_time(ws, args.python, case, case.bad, args.quick)
        without = hand_time(ws, args.python, case, case.good, args.quick)
        bad = profile(ws, args.python, case, case.bad, case.name, args.quick)
        good = profile(ws, args.python, case, case.good, f"{case.name}_{case.good}", args.quick)
        if with_it is None or without is None:
            cost, (shown, where, right) = None, ("-", "-", "wrong: the hand timing failed")
        else:
            cost = (with_it - without) / with_it
            shown, where, right = verdict(case, ws, bad, good, cost, gpu)
        rows.append({"case": case.name, "program": f"{case.program}.py --variant {case.bad}",
                     "ms_with": with_it, "ms_without": without, "real_cost": None if cost is None else round(cost, 4),
                     "finding": shown, "line": where, "verdict": right,
                     "findings": [{k: f.get(k) for k in ("kind", "severity", "line", "observation", "figures")}
                                  for f in (bad or {}).get("findings") or []],
                     "findings_without": [f"{f['kind']}@{f['line']}" for f in (good or {}).get("findings") or []]})
        print(f"{case.name}: {right}", file=sys.stderr, flush=True)
    for run in (ws / "runs").iterdir():
        target = out / "runs" / run.name
        if run.is_dir() and not target.exists():
            shutil.copytree(run, target)
        elif run.is_file():
            shutil.copy(run, target)
    shutil.rmtree(ws, ignore_errors=True)
    sizes = {run.name: len(gzip.compress((run / "trace.json").read_bytes(), compresslevel=9))
             for run in sorted((out / "runs").iterdir()) if (run / "trace.json").is_file()}
    (out / "findings_gpu.json").write_text(json.dumps({"machine": machine, "quick": args.quick, "rows": rows,
                                                       "trace_gz_bytes": sizes}, indent=1) + "\n")
    with tarfile.open(out / "cases.tgz", "w:gz") as tar:  # one file, for a machine that hands back few
        tar.add(out / "runs", arcname="runs")
        tar.add(out / "findings_gpu.json", arcname="findings_gpu.json")
    print(f"Measured on {machine}" + ("" if gpu else " (no CUDA: GPU-idle and kernel findings cannot show)")
          + (" — --quick: a check that the script runs, not a measurement" if args.quick else ""))
    print("| program | real cost (hand-timed, ms/step with → without) | finding | its line | right? |")
    print("|---|---|---|---|---|")
    for r in rows:
        cost = "-" if r["real_cost"] is None else f"{r['real_cost']:.0%} ({r['ms_with']:.2f} → {r['ms_without']:.2f})"
        print(f"| {r['program']} | {cost} | {r['finding']} | {r['line']} | {r['verdict']} |")
    print("Traces (compressed): " + ", ".join(f"{name} {size // 1000} kB" for name, size in sizes.items()))
    print(f"Run folders, traces and figures: {out}")


if __name__ == "__main__":
    main()
