"""`stepscope analyze --json` against a process that only runs `orjson.loads`, trace by trace.

    python benchmarks/analyze_vs_orjson.py [FOLDER_OR_TRACE ...] [--pairs 5] [--inflate]
        [--before SRC] [--only SUBSTRING] [--python PYTHON]

For every `.json` / `.json.gz` under the folders given (default: ../shared/traces/public and
../shared/traces/public2), in the same run and interleaved, `--pairs` pairs of whole processes:
- `analyze`: `python -m stepscope analyze --json TRACE > /dev/null`, from this checkout's
  `server` folder (or the tree on PYTHONPATH when this one is not found);
- `orjson`: `python -c "import orjson,sys; orjson.loads(open(sys.argv[1],'rb').read())" TRACE`; for
  a `.json.gz` both sides inflate it: `stepscope` as it reads (zlib-ng), the orjson process with
  `zlib_ng.gzip_ng.decompress` (the same zlib-ng, the fastest inflate either side has);
- `before` (with `--before SRC`, a `server` folder of another source tree): the same analyze
  command from that tree, run in every pair too, for before/after figures from one run.
The order inside a pair alternates (analyze first, then orjson first), so neither side always runs
on a machine the other has just warmed. `--inflate` adds an uncompressed copy of every `.json.gz`
(in a temporary folder), so a trace is also measured as plain JSON.

A file that is not a trace (stepscope refuses it: exit 2) is left out, with the reason it gives.
Every process runs with Python's bytecode caches, as an installed package has them: the first,
untimed analyze run writes them (PYTHONDONTWRITEBYTECODE is dropped).

Per trace it prints: size of the file (and of its JSON), events (the report's `window.events`),
the medians of wall time and of CPU time (user + system, the process and its waited-for children,
from `os.wait4`), the ratio analyze / orjson of the medians, and each side's peak resident memory
(`ru_maxrss` of the process as `os.wait4` reports it: the largest of the process and the children
it waited for; the largest over the pairs). The machine, its cores and its load average before and
after are printed with the table: on a loaded machine compare only within one run.
"""

from __future__ import annotations

import argparse
import gzip
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FOLDERS = [ROOT.parent / "shared" / "traces" / "public", ROOT.parent / "shared" / "traces" / "public2"]
ORJSON_PLAIN = "import orjson,sys; orjson.loads(open(sys.argv[1],'rb').read())"
ORJSON_GZ = ("import orjson,sys; from zlib_ng import gzip_ng; "
             "orjson.loads(gzip_ng.decompress(open(sys.argv[1],'rb').read()))")
BASE_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}


def _traces(args: list[str]) -> list[Path]:
    out: list[Path] = []
    for a in args or [str(f) for f in DEFAULT_FOLDERS]:
        p = Path(a)
        if p.is_dir():
            out += sorted(f for f in p.rglob("*") if f.is_file() and f.name.endswith((".json", ".json.gz")))
        elif p.is_file():
            out.append(p)
        else:
            print(f"not found: {p}", file=sys.stderr)
    return out


def _run(cmd: list[str], env: dict[str, str], stdout=subprocess.DEVNULL) -> tuple[float, float, int, int]:
    """(wall s, user+sys s, peak RSS KB, exit status) of one process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=stdout, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, proc.returncode


def _json_bytes(path: Path) -> int:
    with open(path, "rb") as f:
        if f.read(2) != b"\x1f\x8b":
            return path.stat().st_size
    with gzip.open(path, "rb") as f:
        n = 0
        while chunk := f.read(1 << 22):
            n += len(chunk)
        return n


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 100_000 else f"{n / 1e3:.1f} KB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", help="trace files or folders (default: shared/traces/public and public2)")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--inflate", action="store_true", help="also measure an uncompressed copy of every .json.gz")
    ap.add_argument("--before", help="the `server` folder of another source tree, run in every pair too")
    ap.add_argument("--only", help="only the traces whose path holds this text")
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args()

    trees = {"analyze": str(ROOT / "server")}
    if a.before:
        trees["before"] = str(Path(a.before).resolve())
    envs = {name: {**BASE_ENV, "PYTHONPATH": tree} for name, tree in trees.items()}
    tmp = Path(tempfile.mkdtemp(prefix="analyze-vs-orjson-"))
    traces = [t for t in _traces(a.paths) if not a.only or a.only in str(t)]
    if a.inflate:
        for t in list(traces):
            if t.name.endswith(".gz"):
                plain = tmp / f"{len(traces)}-{t.name[:-3]}"
                with gzip.open(t, "rb") as src, open(plain, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 22)
                traces.append(plain)

    print(f"machine: {platform.node()}, {os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}; load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{a.pairs} interleaved pairs per trace; .json.gz: stepscope inflates with zlib-ng as it reads, "
          "the orjson process with zlib_ng.gzip_ng.decompress")
    names = list(trees)
    header = ("| trace | file | JSON | events | " + " | ".join(f"{n} wall s" for n in names)
              + " | orjson wall s | " + " | ".join(f"{n} / orjson" for n in names) + " | "
              + " | ".join(f"{n} CPU s" for n in names) + " | orjson CPU s | "
              + " | ".join(f"{n} / orjson CPU" for n in names) + " | "
              + " | ".join(f"{n} peak MB" for n in names) + " | orjson peak MB |")
    rows, skipped = [], []
    for trace in traces:
        shown = str(trace.relative_to(tmp)) + " (inflated)" if tmp in trace.parents else \
            os.path.relpath(trace, ROOT.parent / "shared" / "traces") if "shared/traces" in str(trace) else str(trace)
        analyze = {n: [a.python, "-m", "stepscope", "analyze", "--json", str(trace)] for n in names}
        orjson_cmd = [a.python, "-c", ORJSON_GZ if trace.name.endswith(".gz") else ORJSON_PLAIN, str(trace)]
        # untimed: writes the bytecode caches, says whether this is a trace, and counts its events
        report_of = tmp / "report.json"
        for n in names:
            with open(report_of, "wb") as out:
                _, _, _, rc = _run(analyze[n], envs[n], stdout=out)
            if rc != 0:
                break
        if rc != 0:
            err = subprocess.run(analyze["analyze"], env=envs["analyze"], capture_output=True, text=True).stderr
            reason = (err.strip().splitlines() or [f"exit {rc}"])[-1]
            skipped.append((shown, reason))
            print(f"skipped {shown}: {reason}", flush=True)
            continue
        events = orjson.loads(report_of.read_bytes()).get("window", {}).get("events")
        wall: dict[str, list[float]] = {n: [] for n in [*names, "orjson"]}
        cpu: dict[str, list[float]] = {n: [] for n in wall}
        peak: dict[str, int] = {n: 0 for n in wall}
        for i in range(a.pairs):
            order = [*names, "orjson"] if i % 2 == 0 else ["orjson", *names[::-1]]
            for n in order:
                w, c, rss, rc = _run(orjson_cmd if n == "orjson" else analyze[n],
                                     BASE_ENV if n == "orjson" else envs[n])
                if rc != 0:
                    raise SystemExit(f"{n} failed on {trace} (exit {rc})")
                wall[n].append(w)
                cpu[n].append(c)
                peak[n] = max(peak[n], rss)
        med = {n: statistics.median(v) for n, v in wall.items()}
        mcpu = {n: statistics.median(v) for n, v in cpu.items()}
        row = (f"| {shown} | {_mb(trace.stat().st_size)} | {_mb(_json_bytes(trace))} | {events} | "
               + " | ".join(f"{med[n]:.3f}" for n in names) + f" | {med['orjson']:.3f} | "
               + " | ".join(f"**{med[n] / med['orjson']:.2f}×**" if n == "analyze" else f"{med[n] / med['orjson']:.2f}×"
                            for n in names)
               + " | " + " | ".join(f"{mcpu[n]:.3f}" for n in names) + f" | {mcpu['orjson']:.3f} | "
               + " | ".join(f"{mcpu[n] / mcpu['orjson']:.2f}×" for n in names)
               + " | " + " | ".join(f"{peak[n] / 1024:.0f}" for n in [*names, "orjson"]) + " |")
        rows.append(row)
        print(row, flush=True)
    print()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("X / orjson: the median wall (or CPU: user + system) time of X's process over the orjson process's")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for row in rows:
        print(row)
    for shown, reason in skipped:
        print(f"left out: {shown}: {reason}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
