"""On a GPU machine: what the editor's hover says about a line's kernels, checked against the line.

    PYTHONPATH=server python benchmarks/gpu_hover_check.py const_copy sync_every_step

Copies benchmarks/gpu_cases/ into a temporary workspace, profiles each named case there with
`stepscope profile CASE.py --line <its training loop> --json` (its default variant), then for every
line that
launched kernels checks what the hover lists (`lines[].top_kernels`, analysis/line_work.py):
- the line has a kernel list (GPU observed), and it is not empty;
- no listed kernel name's time per step is above the line's own GPU time per step (a name's union
  of intervals is part of the line's union: a name above it would mean a sum of overlapping events);
- no listed name's launches per step are above the line's kernels per step.
It prints each line's hover as the editor shows it (presenter's Markdown) for the costliest line, and
OK or the mismatches. Exit 1 on a mismatch. Say which machine the output came from when you quote it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from stepscope.analysis import present

TOLERANCE_MS = 0.001  # the report rounds to 4 decimals


CASES = Path(__file__).resolve().parent / "gpu_cases"


def check(case: Path) -> list[str]:
    loop = next(n for n, text in enumerate(case.read_text().splitlines(), 1) if "for i in range(args.steps)" in text)
    done = subprocess.run([sys.executable, "-m", "stepscope", "profile", case.name, "--line", str(loop), "--json"],
                          capture_output=True, text=True, timeout=900, cwd=case.parent)
    if done.returncode != 0:
        return [f"{case.name}: stepscope profile failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}"]
    report = json.loads(done.stdout)
    problems = []
    if not (report.get("gpu") or {}).get("observed"):
        return [f"{case.name}: GPU not observed ({report['gpu'].get('reason')}): run this on a GPU machine"]
    launching = [line for line in report["lines"] if line.get("kernels")]
    for line in launching:
        where = f"{case.name}:{line['line']}"
        kernels = line.get("top_kernels")
        if not kernels:
            problems.append(f"{where}: {line['kernels']} kernels per step but no kernel list")
            continue
        for entry in kernels:
            if line.get("gpu_ms") is not None and entry["ms"] > line["gpu_ms"] + TOLERANCE_MS:
                problems.append(f"{where}: {entry['name'][:60]} {entry['ms']} ms > the line's GPU {line['gpu_ms']} ms")
            if entry["calls"] > line["kernels"] + 0.5:
                problems.append(f"{where}: {entry['name'][:60]} {entry['calls']} launches > the line's {line['kernels']}")
    if launching:
        top = max(launching, key=lambda line: line["gpu_ms"] or 0.0)
        print(f"--- {case.name}: the hover of line {top['line']} ---")
        print(present.line_hover(top, report, "RUN"))
    print(f"{case.name}: {len(launching)} lines launched kernels, {len(problems)} mismatch(es)")
    return problems


def main() -> None:
    with tempfile.TemporaryDirectory() as ws:
        for source in CASES.glob("*.py"):
            shutil.copy(source, ws)
        subprocess.run(["git", "init", "-q", ws], check=True)
        problems = [p for name in sys.argv[1:] for p in check(Path(ws) / f"{name}.py")]
    smi = shutil.which("nvidia-smi")
    print("machine:", subprocess.run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                     capture_output=True, text=True).stdout.strip() if smi else "no nvidia-smi")
    for problem in problems:
        print("MISMATCH", problem)
    print("OK" if not problems else f"{len(problems)} mismatch(es)")
    raise SystemExit(1 if problems else 0)


if __name__ == "__main__":
    main()
