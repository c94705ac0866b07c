"""The trace panel on a large trace: what the timeline adds to the analysis, the time until the panel
is interactive once the analysis has finished, and the frame times of pan and zoom in headless
Chromium with 100k+ spans in view.

    PYTHONPATH=server python benchmarks/panel_interactive.py TRACE [--repeat 5] [--tools DIR]
    PYTHONPATH=server python benchmarks/panel_interactive.py --generate [--size-mb 148]
    ... [--against OTHER_CHECKOUT] [--repeat 0]

With `--against`, the panel of another checkout of Stepscope (built there, e.g. `git worktree add
../stepscope-main main`) is measured on the same files, its runs interleaved with this one's, and
both are printed side by side. `--repeat 0` leaves out the analysis's timings (part 1).

TRACE is a trace file (the 148 MB one of docs/trace-engine.md: `trace_record_gpu.py OUT --big-active
40` on a GPU machine, or `--generate`, which replicates tests/data/traces/h200_async with
benchmarks/trace_generate.py; a run folder's files.json beside it is used when present).

1. The analysis, side by side in separate processes, interleaved: `analyze` as the CLI runs it, and
   `analyze` with the timeline (as `stepscope profile` runs it): medians and the ratio.
2. Time to interactive: from the moment report.json and timeline.json are on disk, the editor's side
   (read and parse both, as the extension host does) and the panel's (a fresh page with the host's
   CSP, the state posted to it, the panel showing the timeline with its first frame drawn).
3. Frames: scripted pan and zoom over the whole window and 80% of it (100k+ spans in view): the time
   of each frame's drawing, and the interval between animation frames while it runs.
Targets (issue 14): interactive < 2 s, frames < 50 ms. The machine the figures come from is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "tests" / "data" / "traces" / "h200_async"

ANALYSE = """
import gc, sys, time
gc.disable()
t = time.perf_counter()
from pathlib import Path
from stepscope.analysis.report import analyze
timelines = {} if sys.argv[2] == "1" else None
analyze([Path(sys.argv[1])], timelines=timelines)
print(time.perf_counter() - t)
"""


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.node()}: {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def analysis_times(trace: Path, repeat: int) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "server")}
    times: dict[str, list[float]] = {"report only": [], "report + timeline": []}
    for _ in range(repeat):
        for key, flag in (("report only", "0"), ("report + timeline", "1")):
            run = subprocess.run([sys.executable, "-c", ANALYSE, str(trace), flag], capture_output=True, text=True,
                                 env=env, check=True)
            times[key].append(float(run.stdout.strip()))
    return times


def write_outputs(trace: Path, folder: Path) -> tuple[Path, Path, dict]:
    sys.path.insert(0, str(REPO / "server"))
    from stepscope import jsonio
    from stepscope.analysis.report import analyze

    timelines: dict = {}
    report = analyze([trace], timelines=timelines)
    data = next(iter(timelines.values()))
    if data.startswith(b"!"):
        raise SystemExit(f"no timeline: {data[1:].decode()}")
    jsonio.write_json(folder / "report.json", report)
    (folder / "timeline.json").write_bytes(data)
    doc = json.loads(data)
    return folder / "report.json", folder / "timeline.json", doc


def generate(size_mb: float, folder: Path) -> Path:
    out = folder / "trace.json.gz"
    subprocess.run([sys.executable, str(REPO / "benchmarks" / "trace_generate.py"), str(SOURCE / "trace.json.gz"), str(out),
                    "--size-mb", str(size_mb)], check=True)
    shutil.copy(SOURCE / "files.json", folder / "files.json")
    return out


def summary(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, int(0.95 * len(values)))]
    return (f"min {values[0]:.1f} ms, median {statistics.median(values):.1f} ms, p95 {p95:.1f} ms, max {values[-1]:.1f} ms "
            f"({len(values)} frames)")


def report_frames(seen: dict) -> None:
    print(f"time to interactive after the analysis (the host reads and parses both files, a fresh page, the state "
          f"posted, the panel shows the timeline's first frame), {len(seen['interactive'])} runs: "
          + ", ".join(f"{t:.0f} ms" for t in seen["interactive"]) + " — target < 2000 ms")
    for k, (host, page, panel) in enumerate(zip(seen["host"], seen["transfer"], seen["panel"])):
        phases = ", ".join(f"{name} {ms}" for name, ms in seen["phases"][k].items())
        print(f"  run {k + 1}: the host reads, parses, serialises {host:.0f} ms; the page loads (with the state) "
              f"{page:.0f} ms; the panel, from the state's arrival to its first frame, {panel:.0f} ms ({phases} ms)")
    print(f"spans in view while scripted: min {min(seen['inView'])}, max {max(seen['inView'])}")
    print(f"frame drawing: {summary(seen['draw'])} — target < 50 ms")
    print(f"animation frames while panning and zooming (rAF intervals): {summary(seen['raf'])}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace", nargs="?", type=Path)
    p.add_argument("--generate", action="store_true", help="make the large trace from tests/data (148 MB)")
    p.add_argument("--size-mb", type=float, default=148.0)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--against", type=Path, help="another checkout whose panel is measured beside this one's")
    p.add_argument("--outputs", type=Path, help="a folder with the report.json and timeline.json of an earlier "
                   "run of this benchmark: measure the panel on them, without analysing again")
    p.add_argument("--runs", type=int, default=3, help="fresh pages per panel")
    p.add_argument("--tools", type=Path, default=Path(os.environ.get("STEPSCOPE_TOOLS", REPO / ".cache" / "tools")))
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="panel-bench-"))
    trace = None if args.outputs else generate(args.size_mb, work) if args.generate else args.trace
    if not args.outputs and (trace is None or not trace.exists()):
        p.error("give a TRACE, or --generate, or --outputs")
    print(f"machine: {machine()}; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} (other work slows every figure)")
    if trace:
        print(f"trace: {trace} ({trace.stat().st_size / 1e6:.1f} MB on disk)")

    if trace and args.repeat > 0:
        times = analysis_times(trace, args.repeat)
        for label, pick in (("medians", statistics.median), ("fastest", min)):
            base, both = pick(times["report only"]), pick(times["report + timeline"])
            print(f"analysis, {args.repeat} interleaved runs each ({label}): report only {base:.3f} s, report + timeline "
                  f"{both:.3f} s: the timeline adds {both - base:+.3f} s ({(both / base - 1) * 100:+.0f}%)")
        print(f"  report only: {', '.join(f'{t:.3f}' for t in times['report only'])}")
        print(f"  report + timeline: {', '.join(f'{t:.3f}' for t in times['report + timeline'])}")

    if args.outputs:
        report_path, timeline_path = args.outputs / "report.json", args.outputs / "timeline.json"
        doc = json.loads(timeline_path.read_bytes())
    else:
        report_path, timeline_path, doc = write_outputs(trace, work)
    print(f"timeline.json: {timeline_path.stat().st_size / 1e6:.1f} MB, {len(doc['spans']['start_us'])} spans shown of "
          f"{doc['spans_in_range']} (resolution {doc['resolution_us']} µs), {len(doc['steps'])} steps")

    node = args.tools / "node24" / "node_modules" / ".bin" / "node"
    playwright = args.tools / "drivers" / "node_modules" / "playwright-core"
    if not node.exists() or not playwright.exists() or not Path("/usr/bin/chromium").exists():
        print("browser part skipped: Node 24, playwright-core (tools/setup-tools.sh) or /usr/bin/chromium missing")
        return 0
    checkouts = [("this checkout", REPO)] + ([(f"against {args.against}", args.against.resolve())] if args.against else [])
    seen: dict[str, dict] = {label: {} for label, _ in checkouts}
    for _, root in checkouts:
        subprocess.run([str(node), str(root / "panel" / "build.mjs"), "--production", "--tests"], cwd=root, check=True)
    started = time.perf_counter()
    for run in range(args.runs):  # one fresh page per checkout in turn: the machine's load falls on both alike
        for label, root in checkouts:
            config = {"playwrightCore": str(playwright), "chromium": "/usr/bin/chromium",
                      "htmlModule": str(root / ".cache" / "panel-tests" / "html.mjs"), "dist": str(root / "panel" / "dist"),
                      "harness": str(REPO / "tests" / "panel" / "harness.js"), "report": str(report_path),
                      "timeline": str(timeline_path), "out": str(work / "frames.json"), "runs": 1,
                      "frames": run == args.runs - 1}
            (work / "config.json").write_text(json.dumps(config))
            subprocess.run([str(node), str(REPO / "benchmarks" / "panel_frames.mjs"), str(work / "config.json")], check=True)
            one = json.loads((work / "frames.json").read_text())
            for key, values in one.items():
                seen[label].setdefault(key, []).extend(values)
    for label, _ in checkouts:
        print(f"== {label}")
        report_frames(seen[label])
    if args.against:
        mine, other = seen[checkouts[0][0]], seen[checkouts[1][0]]
        print("== side by side (this checkout / the other; below 1 is faster)")
        for what, key in (("time to interactive", "interactive"), ("the panel's part of it", "panel"),
                          ("frame drawing", "draw"), ("animation-frame interval", "raf")):
            a, b = statistics.median(mine[key]), statistics.median(other[key])
            print(f"  {what}, medians: {a:.1f} ms / {b:.1f} ms = {a / b:.2f}")
    print(f"(browser part took {time.perf_counter() - started:.1f} s; files in {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
