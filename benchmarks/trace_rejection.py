"""How long the reader takes to refuse a truncated trace, by size, beside reading the whole one.

    python benchmarks/trace_rejection.py [--sizes-mb 0.25 0.5 1 1.9 4 16 64] [--repeat 3]
        [--compare before=SRC] [--limit-s 60]

For each size, a Kineto-shaped trace is made (CPU ops with shapes and External ids, ProfilerStep#N
markers): pretty-printed as Kineto writes it, and compact (one line, which the reader cuts by
decoding, not by layout). Then, in one process per measurement (interleaved, medians of
`--repeat`): the time `read_trace` takes on the whole file ("valid"), on the file cut at 95% of its
bytes ("truncated"), and on the whole file followed by a log line ("trailing"). Each reads the file
once with the code of this checkout; `--compare NAME=SRC` times the same from another source tree
(SRC first on PYTHONPATH: `mkdir -p /tmp/before && git archive HEAD server/stepscope | tar -x -C
/tmp/before`, build its modules there, then `--compare before=/tmp/before/server`). A run past
`--limit-s` is stopped and shown as `>LIMIT`. Prints seconds and the ratio of each refusal to the
valid read of the same file.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

REPO_SERVER = Path(__file__).resolve().parents[1] / "server"
READ = (
    "import sys, time\n"
    "from stepscope.trace import read_trace\n"
    "from stepscope.errors import StepscopeError\n"
    "t = time.perf_counter()\n"
    "try:\n"
    "    read_trace(sys.argv[1]); outcome = 'read'\n"
    "except StepscopeError as e:\n"
    "    outcome = type(e).__name__\n"
    "print(time.perf_counter() - t, outcome)\n"
)


def make_trace(size: int, *, indent: bool) -> bytes:
    """A trace of about `size` bytes: steps of 50 ops each (with shapes, so brackets abound)."""

    def events(n: int) -> list[dict]:
        out: list[dict] = []
        for i in range(n):
            step = i // 50
            if i % 50 == 0:
                out.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1,
                            "ts": 1000.0 * step, "dur": 990.0})
            out.append({"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1,
                        "ts": 1000.0 * step + 10 + 15 * (i % 50), "dur": 12.5,
                        "args": {"External id": i, "Input Dims": [[64, 768], [512, 768], [512]],
                                 "Input type": ["float", "float", "float"], "Sequence number": i}})
        return out

    option = orjson.OPT_INDENT_2 if indent else 0
    n = 1000
    for _ in range(2):  # the size of n events, then n scaled to the size asked for
        text = orjson.dumps({"schemaVersion": 1, "traceEvents": events(n), "traceName": "bench"}, option=option)
        n = max(1, int(n * size / len(text)))
    return orjson.dumps({"schemaVersion": 1, "traceEvents": events(n), "traceName": "bench"}, option=option)


def time_read(server: str, path: Path, limit: float) -> tuple[float | None, str]:
    env = dict(os.environ, PYTHONPATH=server, STEPSCOPE_TRACE_WORKERS="1")
    try:
        proc = subprocess.run([sys.executable, "-c", READ, str(path)], capture_output=True, text=True, env=env,
                              timeout=limit)
    except subprocess.TimeoutExpired:
        return None, "stopped"
    if proc.returncode != 0:
        return None, proc.stderr.strip().splitlines()[-1]
    seconds, outcome = proc.stdout.split()
    return float(seconds), outcome


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes-mb", type=float, nargs="+", default=[0.25, 0.5, 1, 1.9, 4, 16, 64])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--compare", action="append", default=[], metavar="NAME=SRC")
    p.add_argument("--limit-s", type=float, default=60.0)
    args = p.parse_args()
    trees = [("this", str(REPO_SERVER))] + [tuple(c.split("=", 1)) for c in args.compare]  # type: ignore[misc]
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; read_trace in one process, "
          f"median of {args.repeat}; seconds (ratio to the valid read of the same tree)")
    print(f"{'layout':<8} {'MB':>6} {'tree':<8} {'valid':>8} {'truncated':>16} {'trailing':>16}")
    with tempfile.TemporaryDirectory() as tmp:
        for indent in (True, False):
            for mb in args.sizes_mb:
                data = make_trace(int(mb * (1 << 20)), indent=indent)
                files = {"valid": Path(tmp) / "valid.json", "truncated": Path(tmp) / "truncated.json",
                         "trailing": Path(tmp) / "trailing.json"}
                files["valid"].write_bytes(data)
                files["truncated"].write_bytes(data[: int(len(data) * 0.95)])
                files["trailing"].write_bytes(data + b"\n[I profiler.cpp:123] trace saved\n")
                for name, server in trees:
                    times: dict[str, list[float | None]] = {k: [] for k in files}
                    outcomes: dict[str, str] = {}
                    for _ in range(args.repeat):
                        for kind, path in files.items():  # interleaved
                            seconds, outcomes[kind] = time_read(server, path, args.limit_s)
                            times[kind].append(seconds)
                    med = {k: (None if None in v else statistics.median(v)) for k, v in times.items()}  # type: ignore[type-var]

                    def cell(kind: str) -> str:
                        if med[kind] is None:
                            return f">{args.limit_s:.0f} s" if outcomes[kind] == "stopped" else outcomes[kind][:16]
                        ratio = f" ({med[kind] / med['valid']:.1f}x)" if med["valid"] else ""
                        return f"{med[kind]:.3f}{ratio}"

                    valid = f"{med['valid']:.3f}" if med["valid"] is not None else cell("valid")
                    print(f"{'pretty' if indent else 'compact':<8} {len(data) / (1 << 20):>6.2f} {name:<8} "
                          f"{valid:>8} {cell('truncated'):>16} {cell('trailing'):>16}", flush=True)
                    if outcomes.get("truncated") == "read":
                        print("  note: the truncated file was read as a trace", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
