"""`stepscope measure SCRIPT`: the step timed without the profiler, and before/after verdicts.

Pipeline: resolve the step (as `profile` does) → run the agent in mode "measure" once per process
(`--runs R`, one after the other, in one run folder; under `--launcher CMD` or `--nproc N`, the
launcher once per process, every rank timed) → the measure document from the processes' timings
(measurement.result: with ranks, each process's slowest rank's figures and every rank's) → with
`--compare RUN`, the verdict against a recorded run; with `--against REV`, the same step of that
git revision measured in processes alternating with the working tree's (capture.revision,
measurement.compare.interleaved_order), the revision's side in a run folder of its own →
measure.json, status.json, the history row(s) → text or one JSON document.

Exit codes as for `profile`: 2 usage (a bad flag, an unknown run or revision, a `--value` the step
cannot evaluate), 3 the program failed, 4 the time limit (per process), 5 refused (the measurements
are not comparable, without `--force`), 6 no step; 130 cancelled.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from .. import errors
from . import program
from .progress import Progress, on_step_events

AGAINST_RUNS = 3  # processes per side with --against, unless --runs says otherwise


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..agent.protocol import MeasureOptions
    from ..capture import options
    from ..capture.request import MeasureRunOptions, RunOptions

    program.add_arguments(p)
    program.add_launcher_argument(p)
    options.add_arguments(p, MeasureOptions, MeasureRunOptions)
    options.add_arguments(p, RunOptions, only=("timeout", "nproc"))
    p.set_defaults(runs=None)  # 1, or AGAINST_RUNS with --against
    p.add_argument("--value", metavar="EXPR",
                   help="the value of each pass, evaluated in the step's frame after it (default: `loss` when the "
                        "step has one), or for a --function step in its frame as it returns, where `return` is what "
                        "it returned (default: that return value's loss, else its `loss`); compared between runs to "
                        "tell whether results changed")
    versus = p.add_mutually_exclusive_group()
    versus.add_argument("--compare", metavar="RUN", help="compare with a recorded run (see `stepscope runs`)")
    versus.add_argument("--against", metavar="REV",
                        help="compare with the same step at git revision REV (e.g. HEAD), in alternating processes")
    p.add_argument("--force", action="store_true", help="compare even when machine or scope differ")
    p.add_argument("--note", help="recorded in the scenario, e.g. 'simplified input'")
    p.add_argument("--json", action="store_true", help="print the result as one JSON document")
    p.add_argument("--progress", action="store_true",
                   help="a line on stderr per pass timed, warm-ups included: `stepscope: progress: DONE/TOTAL ...`")
    p.epilog = "Arguments after `--` are passed to the program."


@dataclasses.dataclass
class Side:
    """One measured side: its request, its run folder, its processes' timings (by rank: None for a
    process without one)."""

    req: Any  # CaptureRequest
    run: Any  # workspace.RunFolder
    label: str
    history_root: Path  # the user's workspace, whose history records the run (the revision's too)
    processes: list[dict] = dataclasses.field(default_factory=list)
    launch_notes: list[str] = dataclasses.field(default_factory=list)  # the runner's, each once


def run(args: argparse.Namespace) -> int:
    from ..agent.protocol import MeasureOptions
    from ..capture import options
    from ..capture.request import MeasureRunOptions, RunOptions

    if args.runs is None:
        args.runs = AGAINST_RUNS if args.against else 1
    check_value(args.value)
    measure, run_options, measure_run = options.from_arguments(args, MeasureOptions, RunOptions, MeasureRunOptions)
    measure = dataclasses.replace(measure, value=args.value)
    target = program.resolve(args)
    check_value(args.value, loop=not target.function)
    root = target.root
    req = measure_request(target, measure, run_options, note=args.note, launcher=program.launcher_words(args))
    baseline = _recorded_side(root, args.compare) if args.compare else None
    real_run_note(root)
    if args.against or args.compare:
        processes_note(measure_run.runs)
    if args.against:
        doc = _against(req, args, measure_run)
    else:
        doc = _measure(req, measure_run, args.progress)
        if baseline is not None:
            doc = _compared(doc, baseline, args, measure_run, root)
    _emit(doc, args)
    return errors.OK


def measure_request(target: "program.Program", measure, run_options, *, note: str | None = None,
                    launcher: tuple[str, ...] = ()):
    """The CaptureRequest that measures `target`'s step with these options (its loop's header as the
    scope names the step; the seed in PYTHONHASHSEED)."""
    from ..capture.request import CaptureRequest
    from ..source.linemap import header_text

    header = (header_text(target.script.read_text(encoding="utf-8"), target.loop_line)
              if target.loop_line and not target.function else None)
    return CaptureRequest(
        root=target.root, target_file=target.script, target_line=target.loop_line, target_function=target.function,
        target_micro_batch=target.micro_batch,
        python=target.python, entry_script=target.entry, entry_module=target.module, args=target.args,
        cwd=target.cwd, note=note, run=run_options, measure=measure, step_header=header,
        env_defaults={"PYTHONHASHSEED": str(measure.seed)}, launcher=launcher,
    )


def check_value(expression: str | None, *, loop: bool = False) -> None:
    """A UsageError for a `--value` that is no expression, or that reads `return` of a step that is
    a loop (`loop`)."""
    from ..agent.protocol import uses_return, value_source

    if expression is None:
        return
    if not expression.strip():
        raise errors.UsageError("--value needs an expression")
    try:
        value_source(expression)
    except SyntaxError as e:
        raise errors.UsageError(f"--value {expression!r} is not a Python expression: {e.msg}") from None
    if loop and uses_return(expression):
        raise errors.UsageError(f"--value {expression!r}: `return` is what a step function's call returned, and this "
                                "step is a loop (name the function with --function)")


def real_run_note(root: Path) -> None:
    """On the workspace's first run, say on stderr that the step runs for real."""
    if not (root / ".stepscope" / "runs").exists():
        sys.stderr.write(
            "stepscope: note: the step runs for real — it performs real updates (optimizer steps, "
            "writes). Run it on an experimental state, never on weights you must keep. "
            "The program sees STEPSCOPE_RUN=1 and can skip saving.\n")


def processes_note(runs: int) -> None:
    """Before a comparison with fewer than 3 processes a side, say on stderr what that costs the verdict."""
    if runs < 3:
        sys.stderr.write(f"stepscope: note: {runs} process(es) per side: "
                         + ("run-to-run variation is not observed, so differences under 5% are not called"
                            if runs == 1 else
                            "run-to-run variation rests on one degree of freedom, so the interval is wide")
                         + "; --runs 3 or more for a verdict on small differences\n")


# -- measuring ---------------------------------------------------------------------------------------
class MeasureFailed(errors.StepscopeError):
    """A measure run that ended before its passes were all timed: `reason` in one line (naming the
    side and the process), and the run folder that says how it ended."""

    def __init__(self, reason: str, exit_code: int, run_dir: Path):
        super().__init__(f"{reason} (run folder: {run_dir})", exit_code)
        self.reason, self.run_dir = reason, run_dir


def measure_step(req, measure_run, *, output: Any = None, cancel: Any = None, on_event: Any = None,
                 notes: Any = None) -> dict:
    """Measure the step of `req` in `measure_run.runs` processes, one after the other, in one new run
    folder: its measure document, written into the folder with its status and recorded in the
    history. The one pipeline of `stepscope measure` and of the editor's Measure This Step. A cancel
    (the `cancel` event set) raises capture.runner.Cancelled, a failed process MeasureFailed; either
    way the folder says how the run ended. `notes` (a callable) receives each one-line note."""
    from ..capture.runner import prepare_run

    side = Side(req, prepare_run(req), "working tree", req.root)
    run_sides([side], [(0, p) for p in range(measure_run.runs)], output=output, cancel=cancel, on_event=on_event,
               notes=notes)
    return finish_side(side, measure_run, notes=notes)


def _measure(req, measure_run, show_progress: bool) -> dict:
    from .profile import _cancel_on_signals

    per_process = req.measure.warmup + req.measure.passes
    progress = Progress(per_process * measure_run.runs, enabled=show_progress)
    progress.start(f"starting {req.target_file.name} (imports, data, model)")
    on_event = on_step_events(progress, lambda process, event: pass_words(req, measure_run, process, event))
    with _cancel_on_signals() as cancel:
        return measure_step(req, measure_run, output=sys.stderr, cancel=cancel, on_event=on_event)


def pass_words(req, measure_run, process: int, event: Any, side: str = "") -> str:
    """What a progress line says of a pass: `[side, ][process 2/3, ]pass 4/35 (warm-up|timed)`."""
    per_process = req.measure.warmup + req.measure.passes
    where = f"process {process + 1}/{measure_run.runs}, " if measure_run.runs > 1 else ""
    phase = "warm-up" if event.index < req.measure.warmup else "timed"
    return f"{side + ', ' if side else ''}{where}pass {event.index + 1}/{per_process} ({phase})"


def _note_on_stderr(text: str) -> None:
    sys.stderr.write(f"stepscope: note: {text}\n")


def run_sides(sides: list[Side], order: list[tuple[int, int]], *, output: Any = None, cancel: Any = None,
              on_event: Any = None, notes: Any = None, on_side_event: Any = None) -> None:
    """Run process p of side s for each (s, p) in `order`; on the first failure, every side's
    folder says how the run ended and the failure is raised (one line, naming side and process).
    Each process's events go to `on_event(p, event)` and `on_side_event(s, p, event)`."""
    from ..capture.runner import Cancelled, finish_run, run_measure_process

    total = {s: sum(1 for t, _ in order if t == s) for s in range(len(sides))}
    for s, process in order:
        side = sides[s]

        def events(event: Any, s: int = s, p: int = process) -> None:
            if on_event is not None:
                on_event(p, event)
            if on_side_event is not None:
                on_side_event(s, p, event)

        try:
            result = run_measure_process(side.req, side.run, process, output=output, cancel=cancel,
                                         on_event=events if on_event or on_side_event else None)
        except Cancelled as e:
            for other in sides:
                finish_run(other.run, "cancelled", 130, "cancelled")
                _record(other, notes)
            raise Cancelled(str(e), side.run.path) from None
        if not result.ok:
            where = f"process {process + 1} of {total[s]}" if total[s] > 1 else ""
            if len(sides) > 1:
                where = f"the {side.label}'s {where}".strip()
            reason = f"{where}: {result.reason}" if where else str(result.reason)
            for other in sides:
                status = "timeout" if result.exit_code == errors.TIMEOUT else "failed"
                finish_run(other.run, status, result.exit_code,
                           reason if other is side else f"not finished: {reason}")
                _record(other, notes)
            raise MeasureFailed(reason, result.exit_code, side.run.path)
        from .. import jsonio

        side.processes.append({rank: jsonio.read_json(path) for rank, path in result.timings.items()})
        side.launch_notes += [note for note in result.notes if note not in side.launch_notes]


def finish_side(side: Side, measure_run, extra: dict | None = None, notes: Any = None) -> dict:
    """The side's measure document, written into its folder with its status, and recorded."""
    from .. import jsonio
    from ..agent.protocol import MEASURE
    from ..capture.runner import finish_run
    from ..measurement.result import ranked_measurement

    scenario = _scenario(side)
    doc = ranked_measurement(side.processes, machine=scenario.get("machine") or {}, scope=_scope(side, scenario),
                             tolerance=measure_run.tolerance)
    doc["run_dir"] = str(side.run.path)
    doc["notes"] = side.launch_notes + _notes(side)
    doc["seeds"] = scenario.get("seeds")
    doc.update(extra or {})
    jsonio.write_json(side.run.file(MEASURE), doc, replace=False)
    finish_run(side.run, "complete", errors.OK, None)
    _record(side, notes)
    return doc


def _scenario(side: Side) -> dict:
    from .. import jsonio
    from ..agent.protocol import SCENARIO

    try:
        return jsonio.read_json(side.run.file(SCENARIO))
    except (OSError, ValueError):
        return {}


def _notes(side: Side) -> list[str]:
    """The notes of every process's scenario record (every rank's, under a launcher), each once."""
    from .. import jsonio
    from ..agent.protocol import SCENARIO, parse_run_file_name

    records = [path for path in side.run.path.iterdir() if parse_run_file_name(path.name).name == SCENARIO]
    found: list[str] = []
    for path in sorted(records, key=lambda p: (parse_run_file_name(p.name).cycle, p.name)):
        try:
            record = jsonio.read_json(path)
        except (OSError, ValueError):
            continue
        for note in record.get("notes") or []:
            if note.get("detail") and note["detail"] not in found:
                found.append(note["detail"])
    return found


def _scope(side: Side, scenario: dict) -> dict:
    from ..measurement.scope import scope_of
    from ..workspace import relpath

    req = side.req
    scope = scope_of(scenario, kind="measure", script=relpath(req.target_file, req.root), warmup=req.measure.warmup)
    scope["step"]["header"] = req.step_header
    scope["value"] = req.measure.value
    scope["options"] = {"warmup": req.measure.warmup, "passes": req.measure.passes, "seed": req.measure.seed,
                        "value": req.measure.value}
    return scope


def _record(side: Side, notes: Any = None) -> None:
    """The side's row in the history; a history that cannot be written costs a note, not the run."""
    from ..history.index import record_run

    try:
        record_run(side.history_root, side.run.path)
    except errors.StepscopeError as e:
        (notes or _note_on_stderr)(f"the run was not recorded in the history: {e}")


# -- comparing ---------------------------------------------------------------------------------------
def _recorded_side(root: Path, ref: str):
    from ..history.store import History

    with History.open(root) as history:
        return history.side(history.resolve(ref))


def side_of(doc: dict):
    from ..measurement.compare import Side

    return Side(Path(doc["run_dir"]).name, "measure", [r["raw_ms"] for r in doc["runs"]],
                (doc["runs"][0].get("values") if doc["runs"] else None), doc["machine"], doc["scope"])


def _comparison(baseline, candidate, args, measure_run, *, paired: bool) -> dict:
    from ..measurement.compare import NotComparable, compare_sides

    try:
        return compare_sides(baseline, candidate, paired=paired, tolerance=measure_run.tolerance, force=args.force)
    except NotComparable as e:
        raise errors.StepscopeError(f"not comparable, the runs differ in {e}; use --force to compare them anyway "
                                    f"(this measurement is kept: {candidate.run})", errors.REFUSED) from None


def _compared(doc: dict, baseline, args, measure_run, root: Path) -> dict:
    """Add the verdict against a recorded run to `doc`, and rewrite its record with it."""
    comparison = _comparison(baseline, side_of(doc), args, measure_run, paired=False)
    return with_comparison(doc, comparison, {"run": baseline.run, "label": baseline.run, "interleaved": False}, root)


def with_comparison(doc: dict, comparison: dict, baseline: dict, root: Path) -> dict:
    """The candidate's document with the comparison in it, written again (the only file of a run
    that is replaced: it was written a moment ago, by this process, without the comparison)."""
    from .. import jsonio
    from ..agent.protocol import MEASURE
    from ..history.index import record_run

    summary = comparison.pop("baseline")
    comparison.pop("candidate")
    doc = {**doc, **comparison, "baseline": {**summary, **baseline}}
    run_dir = Path(doc["run_dir"])
    jsonio.write_json(run_dir / MEASURE, doc, replace=True)
    try:
        record_run(root, run_dir)
    except errors.StepscopeError as e:
        sys.stderr.write(f"stepscope: note: the comparison was not recorded in the history: {e}\n")
    return doc


def _against(req, args, measure_run) -> dict:
    from .. import workspace
    from ..capture.revision import RevisionCheckout
    from ..capture.runner import prepare_run
    from ..capture.step import resolve_function
    from ..measurement.compare import interleaved_order
    from ..source.linemap import header_text, map_step_loop

    with RevisionCheckout(req.root, args.against) as checkout:
        short = f"{args.against} ({checkout.commit[:10]})"
        if not checkout.has_file(req.target_file):
            raise errors.UsageError(f"{workspace.relpath(req.target_file, checkout.toplevel)} does not exist at "
                                    f"{short}")
        old_script = checkout.map_path(req.target_file)
        old_text = old_script.read_text(encoding="utf-8")
        if req.target_function is None:
            old_line = map_step_loop(old_text, req.target_file.read_text(encoding="utf-8"), req.target_line)
            if old_line is None:
                raise errors.StepscopeError(
                    f"the step loop at line {req.target_line} has no counterpart in {old_script.name} at {short}: "
                    "both its header and its first statement changed; measure each side on its own and compare "
                    "them with `stepscope runs compare`", errors.NO_STEP)
        else:
            # the function's def line in the older file, for its scenario record
            old_line = resolve_function(old_script, req.target_function).line
        old_entry = None
        if req.entry_script is not None:
            if not checkout.has_file(req.entry_script):
                raise errors.UsageError(f"{req.entry_script.name} does not exist at {short}")
            old_entry = checkout.map_path(req.entry_script)
        old_req = dataclasses.replace(
            req, root=_in_checkout(checkout, req.root), target_file=old_script, target_line=old_line,
            entry_script=old_entry, cwd=_in_checkout(checkout, Path(req.cwd or req.root)), step_header=header_text(old_text, old_line) if req.target_function is None else None,
            note=f"{req.note + '; ' if req.note else ''}the revision {short} of `measure --against`")
        if (old_req.step_header != req.step_header) and not args.force:
            raise errors.StepscopeError(
                f"not comparable, the step loop differs: `{old_req.step_header}` at {short} vs `{req.step_header}` "
                "in the working tree; use --force to compare them anyway", errors.REFUSED)
        into = workspace.new_run(req.root, f"{req.target_file.stem}-rev")  # in the user's .stepscope/
        before = Side(old_req, prepare_run(old_req, into=into), f"revision {short}", req.root)
        after = Side(req, prepare_run(req), "working tree", req.root)
        order = [(0 if side == "A" else 1, pair) for side, pair in interleaved_order(measure_run.runs)]
        from .profile import _cancel_on_signals

        per_process = req.measure.warmup + req.measure.passes
        progress = Progress(2 * per_process * measure_run.runs, enabled=args.progress)
        progress.start(f"starting {req.target_file.name} at {short} (imports, data, model)")
        on_event = on_step_events(progress, lambda s, process, event: pass_words(
            req, measure_run, process, event, side=(before, after)[s].label))
        with _cancel_on_signals() as cancel:
            run_sides([before, after], order, output=sys.stderr, cancel=cancel, on_side_event=on_event)
    a_doc = finish_side(before, measure_run, {"revision": {"rev": args.against, "commit": checkout.commit}})
    b_doc = finish_side(after, measure_run)
    comparison = _comparison(side_of(a_doc), side_of(b_doc), args, measure_run, paired=True)
    b_doc["against"] = {"rev": args.against, "commit": checkout.commit, "run": Path(a_doc["run_dir"]).name}
    return with_comparison(b_doc, comparison, {"run": Path(a_doc["run_dir"]).name, "label": f"revision {short}",
                                         "interleaved": True, "run_dir": a_doc["run_dir"]}, req.root)


def _in_checkout(checkout, path: Path) -> Path:
    """`path` of the user's repository as the revision's checkout has it (a folder outside the
    repository stays what it is)."""
    path = Path(path).resolve()
    return checkout.map_path(path) if checkout.toplevel in (path, *path.parents) else path


# -- output ------------------------------------------------------------------------------------------
def _emit(doc: dict, args: argparse.Namespace) -> None:
    if args.json:
        from ..jsonio import dumps

        sys.stdout.buffer.write(dumps(doc) + b"\n")
        return
    from ..measurement.present import measurement_text

    sys.stdout.write(measurement_text(doc))
    for note in doc.get("notes") or []:
        sys.stdout.write(f"  note     {note}\n")
    sys.stdout.write(f"\nrun folder: {doc['run_dir']}\n")

