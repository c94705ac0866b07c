"""`stepscope profile SCRIPT`: capture a step under torch.profiler and attribute it to lines.

Pipeline: resolve the step (capture.step) → run the agent (capture.runner; through a launcher with
`--launcher CMD`, or torchrun with `--nproc N`: one agent per rank) → analyse the trace(s)
(analysis.report) → write report.json into the run folder, and sources.json (the text of each file
the report has figures on, as it ran: what a later comparison matches statements through) → print
text or one JSON document.

`--prepare` stops after the run folder: it prints the command that runs the agent under the
launcher (for launchers started once per node, or by a job script), and `stepscope analyze` reads
the folder afterwards.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .. import errors
from . import program
from .progress import Progress, on_step_events


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..agent.protocol import ProfileOptions
    from ..capture import options
    from ..capture.request import RunOptions

    program.add_arguments(p)
    program.add_launcher_argument(p)
    p.add_argument("--prepare", action="store_true",
                   help="only write the run folder and print the command that runs it (put it where your "
                        "launcher's command names the program, on every node); then `stepscope analyze` the folder")
    options.add_arguments(p, ProfileOptions, RunOptions)
    p.add_argument("--note", help="recorded in the scenario, e.g. 'simplified input'")
    p.add_argument("--out", help="run folder to create (must not exist)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON document")
    p.add_argument("--progress", action="store_true",
                   help="a line on stderr per step the program begins: `stepscope: progress: DONE/TOTAL ...`")
    p.epilog = "Arguments after `--` are passed to the program."


def run(args: argparse.Namespace) -> int:
    from ..agent.protocol import ProfileOptions
    from ..capture import options
    from ..capture.request import CaptureRequest, RunOptions, schedule_warnings
    from ..capture.runner import prepare_launch, run_capture

    profile, run_options = options.from_arguments(args, ProfileOptions, RunOptions)
    target = program.resolve(args)
    root = target.root
    req = CaptureRequest(
        root=root, target_file=target.script, target_line=target.loop_line, target_function=target.function,
        target_micro_batch=target.micro_batch,
        python=target.python, entry_script=target.entry, entry_module=target.module, args=target.args,
        cwd=target.cwd, note=args.note, out=Path(args.out) if args.out else None, profile=profile, run=run_options,
        launcher=program.launcher_words(args),
    )
    for warning in schedule_warnings(profile.schedule):
        sys.stderr.write(f"stepscope: note: {warning}\n")
    if args.prepare:
        return _prepare(prepare_launch(req), req.cwd or root, as_json=args.json)
    if not (root / ".stepscope" / "runs").exists():
        sys.stderr.write(
            "stepscope: note: the step runs for real — it performs real updates (optimizer steps, "
            "writes). Run it on an experimental state, never on weights you must keep. "
            "The program sees STEPSCOPE_RUN=1 and can skip saving.\n"
        )
    # With --json, stdout is reserved for the report: the program's output goes to stderr.
    from ..capture.runner import Cancelled

    schedule = profile.schedule
    progress = Progress(schedule.wait + schedule.warmup + schedule.active, enabled=args.progress)
    progress.start(f"starting {req.target_file.name} (imports, data, model)")
    on_event = on_step_events(progress, lambda event: f"step {event.index + 1}/{progress.total} ({event.phase})")
    try:
        with _cancel_on_signals() as cancel:
            result = run_capture(req, output=sys.stderr, cancel=cancel, on_event=on_event)
    except Cancelled as e:
        if e.run_dir is not None:
            record_in_history(root, e.run_dir)
        raise
    for note in result.notes:
        sys.stderr.write(f"stepscope: note: {note}\n")
    if not result.traces:
        record_in_history(root, result.run_dir)
        raise errors.StepscopeError(f"{result.reason} (run folder: {result.run_dir})", result.exit_code)
    redacted = _redact_traces(result.traces) if run_options.redact else None
    try:
        report = _analyse_run(result, redacted)
    except errors.NotATraceError:
        if result.ok:
            raise
        # the program stopped before any step of its window ran: its reason, not the trace's emptiness
        record_in_history(root, result.run_dir)
        raise errors.StepscopeError(f"{result.reason} (run folder: {result.run_dir})", result.exit_code) from None
    keep_sources(root, result.run_dir, report)
    record_in_history(root, result.run_dir)
    if args.json:
        from ..jsonio import dumps

        sys.stdout.buffer.write(dumps(report) + b"\n")
    else:
        from ..analysis.render import render_text

        sys.stdout.write(render_text(report))
        sys.stdout.write(f"\nrun folder: {result.run_dir}\n")
        for copy in redacted or []:
            sys.stdout.write(_redacted_line(copy))
    if not result.ok:
        sys.stderr.write(f"stepscope: {result.reason}; the report covers the steps recorded before that\n")
    return result.exit_code


def _prepare(prepared, cwd: Path, *, as_json: bool) -> int:
    from ..capture.launchers import command

    run_dir = prepared.run.path
    if as_json:
        from ..jsonio import dumps

        sys.stdout.buffer.write(dumps({"run_dir": str(run_dir), "command": prepared.command,
                                       "agent": str(prepared.agent), "cwd": str(cwd)}) + b"\n")
        return 0
    what = ("run this from {cwd}, once if the launcher starts every node's processes (srun), on every node if "
            "each node starts its own (torchrun --nnodes):" if prepared.launcher else
            "put this where your launcher's command names the program (srun … python <agent>, torchrun … <agent>), "
            "run from {cwd}:")
    sys.stdout.write(f"run folder: {run_dir}\n\n{what.format(cwd=command.shown([str(cwd)]))}\n"
                     f"  {command.shown(prepared.command)}\n\n"
                     f"then analyse what the ranks recorded:\n  stepscope analyze {command.shown([str(run_dir)])}\n")
    return 0


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


def keep_sources(root: Path, run_dir: Path, report: dict) -> None:
    """The text of each workspace file the run has figures on, as it ran (sources.json), so that a
    later comparison matches its statements through edits; a file changed while the run went on is
    left out (what ran is not known) and said, as is a folder that cannot be written: never the run."""
    from ..analysis.run_compare import measured_files
    from ..workspace import keep_sources as keep

    try:
        left_out = keep(run_dir, root, measured_files(report, root))
    except OSError as e:
        sys.stderr.write(f"stepscope: note: the run's sources were not kept ({e}): a later comparison matches its "
                         "lines by number\n")
        return
    if left_out:
        sys.stderr.write(f"stepscope: note: {', '.join(left_out)} changed while the run went on: a later comparison "
                         "matches its lines by number\n")


def record_in_history(root: Path, run_dir: Path) -> None:
    """The run's row in the workspace's history; a history that cannot be written costs a note,
    never the run (its folder is the source: `stepscope runs rebuild` indexes it later)."""
    from ..history.index import record_run

    try:
        record_run(root, run_dir)
    except errors.StepscopeError as e:
        sys.stderr.write(f"stepscope: note: the run was not recorded in the history: {e}\n")


def _redact_traces(traces) -> list[dict]:
    """`--redact`: each trace's redacted copy beside it. A copy that cannot be made costs a note and
    its entry's `problem`, never the run or its report."""
    from ..redact.trace_file import counts, redact_beside

    copies = []
    for trace in traces:
        trace = Path(trace).resolve()
        try:
            result = redact_beside(trace)
        except errors.StepscopeError as e:
            sys.stderr.write(f"stepscope: note: no redacted copy of {trace.name}: {e}\n")
            copies.append({"trace": str(trace), "copy": None, "counts": {}, "problem": str(e)})
        else:
            copies.append({"trace": str(trace), "copy": str(result.output), "counts": counts(result),
                           "problem": None})
    return copies


def _redacted_line(copy: dict) -> str:
    if copy["copy"] is None:
        return f"redacted copy: none ({copy['problem']})\n"
    replaced = ", ".join(f"{n} {kind}" for kind, n in sorted(copy["counts"].items())) or "nothing"
    return f"redacted copy: {copy['copy']} (replaced: {replaced})\n"


def _analyse_run(result, redacted: list[dict] | None = None) -> dict:
    from .. import jsonio
    from ..agent.protocol import REPORT
    from ..analysis.panel import write_timelines
    from ..analysis.report import analyze

    timelines: dict = {}
    report = analyze(result.traces, run_dir=result.run_dir, timelines=timelines)
    if redacted is not None:
        report["redacted"] = redacted
    jsonio.write_json(result.run_dir / REPORT, report, replace=False)
    for problem in write_timelines(result.run_dir, timelines):  # the trace panel's; the report stands without
        print(f"stepscope: {problem}", file=sys.stderr)
    return report
