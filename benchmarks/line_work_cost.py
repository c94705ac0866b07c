"""What the hover's lists cost the analysis: attribution with each line's operators and kernels by
name (`lines[].top_ops`, `lines[].top_kernels`, analysis/line_work.py) against attribution without them,
side by side on the same trace, in the same process.

    PYTHONPATH=server python benchmarks/line_work_cost.py TRACE [--repeat 3]

Prints the best of `--repeat` runs of each, their ratio, and the number of outermost operators the
lists are built from. The trace is read once; only `attribute()` is timed (the rest of the analysis
is the same either way). Say which machine the figures came from when you quote them.
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

from stepscope.analysis import attribution, line_work
from stepscope.analysis.links import build_links
from stepscope.analysis.steps import find_steps
from stepscope.trace import read_trace


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("trace", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    trace = read_trace(args.trace)
    links = build_links(trace)
    steps = find_steps(trace, links)
    if not steps:
        raise SystemExit("the trace has no steps: nothing to attribute")
    w0, w1 = steps[0].cpu_start, steps[-1].completion
    ops = len(line_work.outermost_ops(trace, w0, w1, links.device_tracks)[2])

    def run() -> None:
        attribution.attribute(trace, links, steps, file_table=None, source_root=None)

    with_lists = best(run, args.repeat)
    shipped = (attribution.outermost_ops, attribution.named_work)
    attribution.outermost_ops = lambda *a, **k: ([], [], [])  # no points: every list empty
    attribution.named_work = lambda *a, **k: []
    try:
        without = best(run, args.repeat)
    finally:
        attribution.outermost_ops, attribution.named_work = shipped
    print(f"machine: {platform.node()}, {platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print(f"trace: {args.trace.name}, {len(trace)} events, {len(steps)} steps, {ops} outermost operators in the window")
    print(f"attribute() without the lists: {without:.3f} s")
    print(f"attribute() with the lists:    {with_lists:.3f} s  ({with_lists / without:.2f}x)")


if __name__ == "__main__":
    main()
