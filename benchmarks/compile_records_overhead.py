"""What taking torch.compile's records costs: the same compiled program profiled with the records
(Inductor's provenance, and on the CPU its C++ kernels' profiler records) and without them
(`--no-compile-records`), each compiled from scratch (a fresh Inductor cache), side by side.

Usage: python benchmarks/compile_records_overhead.py [--rounds N]
Profiles tests/data/compiled/cpu_mlp/ws/train.py (a small compiled MLP) in a temporary workspace and
prints, per configuration, the time to the first step and the first steps (where compiling happens),
ms/step in the window, and the ratios records / no records. The records cost compile time; in the
window they add one profiler record per C++ kernel call on the CPU (none on the GPU, where Triton
kernels have theirs anyway). Says which machine it ran on.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CASE = Path(__file__).resolve().parents[1] / "tests" / "data" / "compiled" / "cpu_mlp" / "ws"


def profile(ws: Path, *extra: str) -> dict:
    cache = Path(tempfile.mkdtemp(prefix="inductor-cache-"))
    try:
        r = subprocess.run([sys.executable, "-m", "stepscope", "profile", "train.py", "--line", "11", "--active", "3",
                            "--json", *extra], cwd=ws, capture_output=True, text=True, timeout=1800,
                           env={**__import__("os").environ, "TORCHINDUCTOR_CACHE_DIR": str(cache)})
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if r.returncode != 0:
        raise SystemExit(f"stepscope profile failed ({r.returncode}): {r.stderr[-500:]}")
    report = json.loads(r.stdout)
    startup = report["startup"]
    return {"ms_per_step": report["ms_per_step"], "compile_ms": startup["to_first_step_ms"] + sum(startup["first_steps_ms"])}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        for f in CASE.glob("*.py"):
            shutil.copy(f, ws / f.name)
        subprocess.run(["git", "init", "-q", str(ws)], check=True)
        results: dict[str, list[dict]] = {"records": [], "no records": []}
        for _ in range(args.rounds):  # alternate, so a change of load hits both alike
            results["records"].append(profile(ws))
            results["no records"].append(profile(ws, "--no-compile-records"))
    import torch

    print(f"machine: {platform.node()}, {platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"{args.rounds} round(s), medians")
    med = {k: {f: statistics.median(r[f] for r in v) for f in ("ms_per_step", "compile_ms")} for k, v in results.items()}
    for name, m in med.items():
        print(f"  {name:<11} start-up and compiling {m['compile_ms']:9.0f} ms   window {m['ms_per_step']:9.3f} ms/step")
    print(f"  ratio records / no records: start-up and compiling {med['records']['compile_ms'] / med['no records']['compile_ms']:.2f}, "
          f"ms/step {med['records']['ms_per_step'] / med['no records']['ms_per_step']:.2f}")


if __name__ == "__main__":
    main()
