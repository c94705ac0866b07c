"""What analysing a run in a child process costs the editor, against analysing it in the server.

The language server used to call `analyze()` itself, with its own threads alive (so the analysis
could not fork its parallel part); it now runs `stepscope analyze --json RUN` in a child process of
its interpreter (lsp/analysis_child.py). Side by side, on the same run folder, in the same run:

- in-process, as the server did: `analyze()` here while another thread is alive (no fork);
- child: `analysis_child.analyse()` (interpreter start, imports, the analysis with its fork when the
  trace is large and there are cores for it, the report back through a pipe, parsed here).

Prints the median of each over the repeats and their ratio, with the machine's core count.

Run: `.venv/bin/python benchmarks/analysis_in_child.py RUN_DIR [--repeat 5]`
A large run: `python benchmarks/trace_generate.py tests/data/traces/h200_async/trace.json.gz
/tmp/big/trace.json --size-mb 150`, then copy files.json and scenario.json of h200_async beside it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from stepscope.analysis.report import analyze  # noqa: E402
from stepscope.lsp import analysis_child  # noqa: E402


def in_process(run_dir: Path) -> dict:
    stop = threading.Event()
    alive = threading.Thread(target=stop.wait)  # the server always has another thread: no fork
    alive.start()
    try:
        return analyze([run_dir])
    finally:
        stop.set()
        alive.join()


def timed(fn, run_dir: Path, repeat: int) -> tuple[float, dict]:
    times, result = [], {}
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn(run_dir)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    size = sum(p.stat().st_size for p in args.run_dir.glob("trace*.json*"))
    here, report_here = timed(in_process, args.run_dir, args.repeat)
    child, report_child = timed(analysis_child.analyse, args.run_dir, args.repeat)
    from stepscope.jsonio import dumps, loads

    same = loads(dumps(report_here)) == report_child
    print(f"{args.run_dir}: traces {size / 1e6:.1f} MB, {os.cpu_count()} cores, median of {args.repeat}")
    print(f"  in the server's process (no fork): {here:8.3f} s")
    print(f"  in a child process:                {child:8.3f} s   ({child / here:.2f}x the in-process time)")
    print(f"  same report: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
