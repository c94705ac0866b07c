"""Speed and memory of `stepscope redact` against `stepscope analyze` on the same trace, side by side.

    python benchmarks/redact_speed.py TRACE [TRACE ...] [--repeat 3]

For each trace, interleaved in one run (A, B, C, A, B, C, ...), one fresh process each:
- `analyze`: `stepscope analyze TRACE --json`, stdout discarded (the engine's whole read and analysis);
- `redact`: `stepscope redact TRACE -o OUT` into a new file in a temporary folder (`.json.gz` when the
  trace is gzip: the copy is compressed too);
- `check`: `stepscope redact TRACE --check` (nothing written).
Wall time is the process's elapsed time; peak memory its peak resident set (from the kernel, at
exit; the children's threads are counted, there are no child processes). Prints medians, MB/s of
JSON, the peak as a multiple of the JSON's size, and each command's ratio to `analyze`. Say which
machine the figures come from when you quote them.

The 148 MB trace of docs/trace-engine.md is made with `benchmarks/trace_generate.py SRC OUT --size-mb 148`.
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def json_size(path: Path) -> int:
    with open(path, "rb") as f:
        if f.read(2) != b"\x1f\x8b":
            return path.stat().st_size
    with gzip.open(path, "rb") as g:
        n = 0
        while chunk := g.read(1 << 24):
            n += len(chunk)
        return n


def timed(cmd: list[str]) -> tuple[float, int, int]:
    """(seconds, peak RSS in bytes, exit code) of one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed: {proc.stderr.read().decode() if proc.stderr else ''}")
    return elapsed, usage.ru_maxrss * 1024, proc.returncode


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("traces", nargs="+", type=Path)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    exe = [sys.executable, "-m", "stepscope"]
    for trace in args.traces:
        size = json_size(trace)
        with tempfile.TemporaryDirectory() as tmp:
            suffix = ".json.gz" if trace.read_bytes()[:2] == b"\x1f\x8b" else ".json"
            commands = {
                "analyze": lambda i: exe + ["analyze", str(trace), "--json"],
                "redact": lambda i: exe + ["redact", str(trace), "-o", str(Path(tmp) / f"out{i}{suffix}")],
                "check": lambda i: exe + ["redact", str(trace), "--check"],
            }
            for name, make in commands.items():  # once, untimed: bytecode caches, the file in the page cache
                timed(make("warm"))
            results: dict[str, list[tuple[float, int]]] = {name: [] for name in commands}
            for i in range(args.repeat):
                for name, make in commands.items():
                    seconds, peak, _ = timed(make(i))
                    results[name].append((seconds, peak))
        print(f"{trace} ({size / 1e6:.0f} MB of JSON), {args.repeat} runs each, medians, on {os.cpu_count()} cores:")
        base = statistics.median(s for s, _ in results["analyze"])
        for name, rows in results.items():
            seconds = statistics.median(s for s, _ in rows)
            peak = max(m for _, m in rows)
            print(f"  {name:8s} {seconds:6.2f} s  {size / seconds / 1e6:5.0f} MB/s  peak {peak / 1e6:6.0f} MB "
                  f"({peak / size:.2f}x the JSON)  {seconds / base:.2f}x analyze")
    return 0


if __name__ == "__main__":
    sys.exit(main())
