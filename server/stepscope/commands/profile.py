"""`stepscope profile SCRIPT`: capture a step under torch.profiler and attribute it to lines.

Pipeline: resolve the step (capture.step) → run the agent (capture.runner; `--nproc N`: one agent
per rank) → analyse the trace(s) (analysis.report) → write report.json into the run folder → print
text or one JSON document.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .. import errors


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..agent.protocol import ProfileOptions
    from ..capture import options
    from ..capture.request import RunOptions

    p.add_argument("script", help="the file that holds the step loop")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--line", type=int, help="line of the step loop (or any line inside it)")
    which.add_argument("--function", help="each call of this function or method is a step (e.g. a request handler): "
                                          "NAME or Class.method, looked for in SCRIPT then in the workspace's modules; "
                                          "module:qualname or path.py:qualname to say where")
    start = p.add_mutually_exclusive_group()
    start.add_argument("--entry", help="the program starts from this file instead of SCRIPT")
    start.add_argument("-m", dest="module", help="the program starts as `python -m MODULE`")
    p.add_argument("--python", help="interpreter that runs the program (default: this one)")
    options.add_arguments(p, ProfileOptions, RunOptions)
    p.add_argument("--note", help="recorded in the scenario, e.g. 'simplified input'")
    p.add_argument("--out", help="run folder to create (must not exist)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON document")
    p.epilog = "Arguments after `--` are passed to the program."


def run(args: argparse.Namespace) -> int:
    from ..agent.protocol import ProfileOptions
    from ..capture import options
    from ..capture.request import CaptureRequest, RunOptions, check_entry_module, schedule_warnings
    from ..capture.runner import run_capture
    from ..capture.step import resolve_function, resolve_step
    from ..workspace import find_root

    profile, run_options = options.from_arguments(args, ProfileOptions, RunOptions)
    check_entry_module(args.module)
    script = Path(args.script).resolve()
    if not script.is_file():
        raise errors.UsageError(f"no such file: {args.script}")
    root = find_root(Path.cwd()) if Path.cwd() in script.parents else find_root(script)
    entry = Path(args.entry).resolve() if args.entry else None
    if entry is not None and not entry.is_file():
        raise errors.UsageError(f"no such file: {args.entry}")
    step_file, function = script, None
    if args.function:
        found = resolve_function(script, args.function, root, Path.cwd())
        # the step's file is where the function is; the program still starts from SCRIPT
        step_file, function, loop_line = found.file, found.qualname, found.line
        if step_file != script and entry is None and not args.module:
            entry = script
    else:
        loop_line = resolve_step(script, args.line)
    extra = list(getattr(args, "script_args", []))
    req = CaptureRequest(
        root=root, target_file=step_file, target_line=loop_line, target_function=function,
        python=args.python or sys.executable, entry_script=entry, entry_module=args.module,
        args=tuple(extra), cwd=Path.cwd(), note=args.note,
        out=Path(args.out) if args.out else None, profile=profile, run=run_options,
    )
    for warning in schedule_warnings(profile.schedule):
        sys.stderr.write(f"stepscope: note: {warning}\n")
    if not (root / ".stepscope" / "runs").exists():
        sys.stderr.write(
            "stepscope: note: the step runs for real — it performs real updates (optimizer steps, "
            "writes). Run it on an experimental state, never on weights you must keep. "
            "The program sees STEPSCOPE_RUN=1 and can skip saving.\n"
        )
    if run_options.nproc > 1 and "OMP_NUM_THREADS" not in os.environ:
        sys.stderr.write(f"stepscope: note: each of the {run_options.nproc} ranks runs with OMP_NUM_THREADS=1, as "
                         "under torchrun; set OMP_NUM_THREADS to choose another value\n")
    # With --json, stdout is reserved for the report: the program's output goes to stderr.
    with _cancel_on_signals() as cancel:
        result = run_capture(req, output=sys.stderr, cancel=cancel)
    if not result.traces:
        raise errors.StepscopeError(f"{result.reason} (run folder: {result.run_dir})", result.exit_code)
    report = _analyse_run(result)
    if args.json:
        from ..jsonio import dumps

        sys.stdout.buffer.write(dumps(report) + b"\n")
    else:
        from ..analysis.render import render_text

        sys.stdout.write(render_text(report))
        sys.stdout.write(f"\nrun folder: {result.run_dir}\n")
    if not result.ok:
        sys.stderr.write(f"stepscope: {result.reason}; the report covers the steps recorded before that\n")
    return result.exit_code


@contextmanager
def _cancel_on_signals() -> Iterator[threading.Event]:
    """While the capture runs, SIGINT and SIGTERM to Stepscope cancel it: the runner stops every
    process group it started (all ranks) and the run folder says "cancelled"."""
    cancel = threading.Event()
    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        yield cancel
        return
    previous = {sig: signal.signal(sig, lambda *_: cancel.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield cancel
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _analyse_run(result) -> dict:
    from .. import jsonio
    from ..agent.protocol import REPORT
    from ..analysis.panel import write_timelines
    from ..analysis.report import analyze

    timelines: dict = {}
    report = analyze(result.traces, run_dir=result.run_dir, timelines=timelines)
    jsonio.write_json(result.run_dir / REPORT, report, replace=False)
    for problem in write_timelines(result.run_dir, timelines):  # the trace panel's; the report stands without
        print(f"stepscope: {problem}", file=sys.stderr)
    return report
