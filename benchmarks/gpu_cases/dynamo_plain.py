"""Dynamo's counters of a case run without Stepscope, beside those of its Stepscope profile.

Usage: python dynamo_plain.py CASE VARIANT STEPS PROFILED_RUN
Runs CASE.py --variant VARIANT --steps STEPS in this process (no profiler, no instrumentation), then
prints dynamo's counters (frames compiled, frames that compiled without falling back, graphs, graph
breaks) beside the ones the profiled run's scenario recorded by its window's end (compilations
before the window plus those inside it), and `same` or `DIFFERENT`. Under Stepscope the program
must compile to the same graphs, with no graph break or fallback to eager of its own
(docs/compiled.md). The compiled cases compile in their first steps, long before the window ends.
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path


def profiled_counters(run: Path) -> dict[str, int] | None:
    report = json.loads((run / "report.json").read_text())
    dynamo = (report["scenario"].get("torch_compile") or {}).get("dynamo") or {}
    before, during = dynamo.get("before_window"), dynamo.get("during_window")
    if before is None:
        return None
    return {k: v + (during or {}).get(k, 0) for k, v in before.items()}


def main() -> int:
    case, variant, steps, run = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])
    sys.argv = [f"{case}.py", "--variant", variant, "--steps", steps]
    runpy.run_path(f"{case}.py", run_name="__main__")
    from torch._dynamo.utils import counters

    plain = {"frames_compiled": int(counters["frames"]["total"]), "frames_ok": int(counters["frames"]["ok"]),
             "graphs": int(counters["stats"]["unique_graphs"]),
             "graph_breaks": int(sum(counters["graph_break"].values()))}
    profiled = profiled_counters(run)
    verdict = "same" if profiled == plain else "DIFFERENT"
    print(f"{run.name:<24} dynamo without Stepscope {json.dumps(plain)} | under Stepscope {json.dumps(profiled)}: "
          f"{verdict}")
    if counters["graph_break"]:
        print(f"  graph breaks without Stepscope: {dict(counters['graph_break'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
