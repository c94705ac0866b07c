"""Speed and memory of `stepscope analyze --json` against the competing approaches, side by side.

    python benchmarks/trace_speed.py TRACE [TRACE ...] [--repeat 3] [--hta-python PATH]

For each trace, in the same run and interleaved (A, B, C, A, B, C, ...), one fresh process each:
- `orjson.loads`: a process that only reads the file and decodes it with `orjson.loads`
  (`.gz` read through gzip) — the floor for any full decode with orjson;
- `stepscope`: the whole `stepscope analyze TRACE --json` command, stdout discarded (by default
  slices scanned on threads, parts of the analysis in forked children), and `stepscope-1p` the
  same in one process (`STEPSCOPE_TRACE_WORKERS=1 STEPSCOPE_ANALYSIS_FORK=0`);
- `hta` (with --hta-python, an interpreter that has HolisticTraceAnalysis installed):
  `TraceAnalysis(trace_dir=...)`, which parses the trace into its dataframes;
- with `--compare NAME=SRC` (repeatable), `NAME` and `NAME-1p`: the same stepscope commands run
  from another source tree (SRC is put first on PYTHONPATH), e.g. the last commit's
  (`mkdir -p /tmp/before && git archive HEAD server/stepscope | tar -x -C /tmp/before`, then
  `--compare before=/tmp/before/server`), for before/after figures from one run.
Wall time is the process's elapsed time, from runs where nothing else is measured. Every process
runs with Python's bytecode caches, as an installed package has them (pip compiles them at install
time): `PYTHONDONTWRITEBYTECODE` is dropped, and each stepscope tree runs once, untimed, before the
timed runs (compiling from source would add ~50 ms to each run). Peak memory is
the process's peak resident memory (exact, from the kernel at exit); for the contenders that start
child processes (decoding workers, a forked child) it is the larger of that and the largest sum of
the tree's proportional resident memory (PSS: a page shared with a forked child counts once),
sampled in one more run of its own: reading PSS walks the page tables of a process and slows it,
so a sampled run is never timed. Prints medians, MB/s of JSON and ratios.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ORJSON_ONLY = (
    "import gzip, sys, orjson\n"
    "p = sys.argv[1]\n"
    "raw = open(p, 'rb').read()\n"
    "raw = gzip.decompress(raw) if raw[:2] == b'\\x1f\\x8b' else raw\n"
    "orjson.loads(raw)\n"
)
BASE_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # see the docstring
HTA = (
    "import sys, logging\n"
    "logging.disable(logging.CRITICAL)\n"
    "from hta.trace_analysis import TraceAnalysis\n"
    "TraceAnalysis(trace_dir=sys.argv[1])\n"
)


def _memory_kb(pid: int) -> int:
    """Proportional resident memory (PSS: a page shared by k processes counts 1/k in each, so the
    sum over a process and its forked child is what they really hold), else RSS; 0 once gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[21]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
    except (OSError, ValueError, IndexError):
        return 0


def _descendants(root: int) -> list[int]:
    """A process and all its descendants (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, stack = [], [root]
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(children.get(pid, []))
    return out


def measure(cmd: list[str], env: dict[str, str] | None = None, *, sample_tree: bool = False) -> tuple[float, float, int]:
    """(wall seconds, peak MB, exit code).

    The peak is the process's own peak RSS (exact, from the kernel at exit); with `sample_tree`, the
    larger of that and, while it has child processes, the largest sum of their memory
    (`_memory_kb`, every 0.25 s). Such a run's wall time is not a fair figure: reading PSS takes
    the measured processes' memory lock and CPU (1.1 GB on 2 cores: 10.6 s unsampled, 13.3 s sampled)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**BASE_ENV, **(env or {})})
    tree_peak, tick, pids = 0, 0, [proc.pid]
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if sample_tree and tick % 10 == 0:
            pids = _descendants(proc.pid)
        if sample_tree and len(pids) > 1 and tick % 5 == 0:
            tree_peak = max(tree_peak, sum(map(_memory_kb, pids)))
        tick += 1
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    peak = max(usage.ru_maxrss, tree_peak)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode:
        print(f"  ! {' '.join(cmd[:4])} failed ({proc.returncode}): {err.strip().splitlines()[-1:] }")
    return wall, peak / 1024, proc.returncode


def json_size(path: Path) -> int:
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    if not gz:
        return path.stat().st_size
    n = 0
    with gzip.open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            n += len(chunk)
    return n


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("traces", nargs="+", type=Path)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--hta-python", help="an interpreter with HolisticTraceAnalysis installed")
    p.add_argument("--stepscope-python", default=sys.executable)
    p.add_argument("--compare", action="append", default=[], metavar="NAME=SRC",
                   help="also run stepscope from the source folder SRC (put first on PYTHONPATH)")
    p.add_argument("--no-orjson", action="store_true", help="skip the orjson.loads process (it needs ~8x the JSON in memory)")
    args = p.parse_args()
    print(f"machine: {os.cpu_count()} cores; python {sys.version.split()[0]}; medians of {args.repeat} runs")
    for trace in args.traces:
        size = json_size(trace)
        print(f"\n{trace} ({trace.stat().st_size / 1e6:.1f} MB on disk, {size / 1e6:.1f} MB of JSON)")
        hta_dir = None
        contenders: dict[str, list[str]] = {
            "orjson.loads": [sys.executable, "-c", ORJSON_ONLY, str(trace)],
            "stepscope": [args.stepscope_python, "-m", "stepscope", "analyze", str(trace), "--json"],
            "stepscope-1p": [args.stepscope_python, "-m", "stepscope", "analyze", str(trace), "--json"],
        }
        envs = {"stepscope-1p": {"STEPSCOPE_TRACE_WORKERS": "1", "STEPSCOPE_ANALYSIS_FORK": "0"}}
        compared = [spec.partition("=")[0] for spec in args.compare]
        for spec in args.compare:
            name, _, src = spec.partition("=")
            contenders[name] = list(contenders["stepscope"])
            contenders[f"{name}-1p"] = list(contenders["stepscope"])
            envs[name] = {"PYTHONPATH": str(Path(src).resolve())}
            envs[f"{name}-1p"] = {"PYTHONPATH": str(Path(src).resolve()), **envs["stepscope-1p"]}
        if args.no_orjson:
            del contenders["orjson.loads"]
        if args.hta_python:
            hta_dir = Path(tempfile.mkdtemp(prefix="hta-"))
            os.symlink(trace.resolve(), hta_dir / trace.name)
            contenders["hta"] = [args.hta_python, "-c", HTA, str(hta_dir)]
        for name in ["stepscope", *compared]:  # untimed: writes the trees' bytecode caches
            measure(contenders[name], envs.get(name))
        results: dict[str, list[tuple[float, float]]] = {k: [] for k in contenders}
        for _ in range(args.repeat):
            for name, cmd in contenders.items():
                wall, peak, rc = measure(cmd, envs.get(name))
                if rc == 0:
                    results[name].append((wall, peak))
        med = {k: (statistics.median(w for w, _ in v), statistics.median(m for _, m in v)) for k, v in results.items() if v}
        # the contenders with child processes: one more run, its memory sampled, its time unused
        for name in [k for k in med if (k == "stepscope" or k in compared)]:
            _, peak, rc = measure(contenders[name], envs.get(name), sample_tree=True)
            if rc == 0:
                med[name] = (med[name][0], max(med[name][1], peak))
        if hta_dir:
            shutil.rmtree(hta_dir, ignore_errors=True)
        for name, (wall, peak) in med.items():
            print(f"  {name:<13} {wall:7.2f} s  {size / 1e6 / wall:7.1f} MB/s  peak {peak:8.0f} MB "
                  f"({peak * 1e6 / size:4.2f}x the JSON)")
        if "stepscope-1p" in med and "orjson.loads" in med:
            print(f"  stepscope-1p / orjson.loads time: {med['stepscope-1p'][0] / med['orjson.loads'][0]:.2f}x")
        if "stepscope" in med and "orjson.loads" in med:
            print(f"  stepscope / orjson.loads time: {med['stepscope'][0] / med['orjson.loads'][0]:.2f}x  "
                  f"memory: {med['stepscope'][1] / med['orjson.loads'][1]:.2f}x")
        for spec in args.compare:
            name = spec.partition("=")[0]
            for suffix, ours in (("", "stepscope"), ("-1p", "stepscope-1p")):
                if name + suffix in med and ours in med:
                    print(f"  {name + suffix} / {ours} time: {med[name + suffix][0] / med[ours][0]:.2f}x")
        if "stepscope-1p" in med and "hta" in med:
            print(f"  hta / stepscope-1p time: {med['hta'][0] / med['stepscope-1p'][0]:.1f}x")
        if "stepscope" in med and "hta" in med:
            print(f"  hta / stepscope time: {med['hta'][0] / med['stepscope'][0]:.1f}x  "
                  f"memory: {med['hta'][1] / med['stepscope'][1]:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
