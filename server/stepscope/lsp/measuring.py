"""The `stepscope.measure` command (Measure This Step), a measure run's document for the trace panel
(`stepscope/measure`), and the verdict between two recorded runs (`stepscope/compareRuns` when a
side is a measure run).

The step and the program's start are chosen exactly as Profile This Step chooses them
(`profiling.step_program`); the passes are timed by the CLI's own pipeline
(`commands.measure.measure_step`: the agent in mode "measure" once per process, the measure document,
measure.json, status.json, the history row), in a worker thread this coroutine waits on, so a cancel
of the progress stops the program within a poll. A failed or cancelled measure changes nothing on
screen: the client keeps the last good result and says why in one line.

Invariants: a measure run's processes run one at a time; a launch configuration that starts the
program under a launcher (torchrun) measures every rank it starts, as `stepscope measure --launcher`
does, the figures being each process's slowest rank's; comparisons are refused across machines or
scopes unless the client says `force`, with the differences in one line; nothing here words a figure
(measurement.present does).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import errors, jsonio, workspace
from ..agent import protocol
from . import profiling
from .profiling import ProfileFailed

if TYPE_CHECKING:
    from .server import StepscopeServer

log = logging.getLogger("stepscope.lsp")

MEASURE_COMMAND = "stepscope.measure"
CLIENT_MEASURE_COMMAND = "stepscope.measureStep"  # the editor's command the code lens invokes
MEASURE_REQUEST = "stepscope/measure"  # {runId, against?, force?} → the run's measure document (+ comparison)


def measure_settings(ls: "StepscopeServer", args: dict[str, Any]):
    """(MeasureOptions, RunOptions, MeasureRunOptions, the settings as given) of a command: the
    client's `stepscope.measure.*` settings, the profile's time limit (one limit for both)."""
    from ..agent.protocol import MeasureOptions
    from ..capture import options
    from ..capture.request import MeasureRunOptions, RunOptions

    try:
        settings = options.merge_settings([("initializationOptions.measure", ls.options.get("measure")),
                                           ("the command's measure argument", args.get("measure"))],
                                          options.MEASURE_SECTION)
        measure, measure_run = options.from_settings(settings, MeasureOptions, MeasureRunOptions,
                                                     section=options.MEASURE_SECTION)
        # the time limit per process is the profile's (stepscope.profile.timeout): one limit for both
        limits = options.merge_settings([("initializationOptions.profile", ls.options.get("profile")),
                                         ("the command's profile argument", args.get("profile"))])
        (run,) = options.from_settings({k: v for k, v in limits.items() if k == "timeout"}, RunOptions)
    except options.SettingError as e:
        raise ProfileFailed(str(e), errors.USAGE) from None
    return measure, run, measure_run, settings


def _build_request(ls: "StepscopeServer", args: dict[str, Any]):
    from ..capture.request import CaptureRequest
    from ..source.linemap import header_text

    program = profiling.step_program(ls, args, verb="measuring")
    measure, run, measure_run, _ = measure_settings(ls, args)
    step_file, line = program["target_file"], program["target_line"]
    header = None
    if program["target_function"] is None and line:
        try:
            header = header_text(Path(step_file).read_text(encoding="utf-8"), line)
        except OSError as e:
            raise ProfileFailed(f"cannot read {Path(step_file).name}: {e.strerror}", errors.USAGE) from None
    req = CaptureRequest(**program, run=run, measure=measure, step_header=header,
                         env_defaults={"PYTHONHASHSEED": str(measure.seed)})
    return req, measure_run


def _measure(req, measure_run, progress: "profiling._Progress", output, cancel: threading.Event) -> dict:
    from ..commands.measure import measure_step

    per_process = req.measure.warmup + req.measure.passes
    total = per_process * measure_run.runs
    program = req.target_file.name

    def on_event(process: int, event: protocol.Event) -> None:
        if isinstance(event, protocol.StepEvent):
            done = process * per_process + event.index + 1
            where = f"process {process + 1}/{measure_run.runs}, " if measure_run.runs > 1 else ""
            phase = "warm-up" if event.index < req.measure.warmup else "timed"
            progress.report(f"{where}pass {event.index + 1}/{per_process} ({phase})", int(95 * done / total))

    progress.report(f"starting {program} (imports, data, model)", 0)
    return measure_step(req, measure_run, output=output, cancel=cancel, on_event=on_event,
                        notes=lambda text: log.warning("%s", text))


async def measure_at(ls: "StepscopeServer", args: dict[str, Any]) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    progress = profiling._Progress(ls, args.get("workDoneToken"), loop)
    req, measure_run = _build_request(ls, args)
    where = f"{req.target_file.name}:{req.target_line}" if req.target_function is None else \
        f"each call of {req.target_function}"
    progress.begin(f"Stepscope: measuring the loop at {where}" if req.target_function is None
                   else f"Stepscope: measuring {where}")
    log.info("measuring %s:%s with %s (%d passes, %d warm-up, %d process(es))", req.target_file, req.target_line,
             req.python, req.measure.passes, req.measure.warmup, measure_run.runs)
    first_run = not (req.root / workspace.STATE_DIR / workspace.RUNS_DIR).exists()
    try:
        doc = await in_worker(ls, progress, lambda output, cancel: _measure(req, measure_run, progress, output, cancel))
    except ProfileFailed as e:
        profiling.mark_raised(ls, req.target_file, req.root, e, "measure")
        raise
    ls.raised_changed(ls.runs.recovered(req.target_file))  # it ran well: where it raised before is no news
    run_dir = Path(doc["run_dir"])
    ls.runs.remember_root(req.root)
    result = measure_result(doc, run_dir.name)
    first_run_notice(ls, first_run, args)
    progress.end(result["summary"])
    return result


def first_run_notice(ls: "StepscopeServer", first_run: bool, args: dict[str, Any]) -> None:
    """On a workspace's first run, the notice that the step ran for real (unless the client asked first)."""
    if first_run and not args.get("confirmed"):  # a client that asked the user before says so
        from lsprotocol import types

        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning,
                                                       message=profiling.FIRST_RUN_NOTICE))


async def in_worker(ls: "StepscopeServer", progress: "profiling._Progress", work: Any) -> Any:
    """`work(output, cancel)` in a worker thread, the event loop waiting on it: a cancel of the
    progress sets `cancel` (the runner then stops the program within a poll). A cancel, a failed
    process or any StepscopeError ends the progress with its reason and raises ProfileFailed."""
    from ..capture.runner import Cancelled
    from ..commands.measure import MeasureFailed

    loop = asyncio.get_running_loop()
    cancel = threading.Event()
    key = id(cancel)
    profiling._IN_PROGRESS[key] = time.time_ns()
    job = loop.run_in_executor(None, work, profiling._LogLines(ls, loop), cancel)
    try:
        while not job.done():
            if progress.cancelled():
                cancel.set()
            await asyncio.wait({job}, timeout=0.2)
        return job.result()
    except asyncio.CancelledError:
        cancel.set()
        await asyncio.shield(asyncio.wait({job}, timeout=10))
        progress.end("cancelled")
        raise
    except Cancelled as e:
        progress.end("cancelled")
        raise ProfileFailed("cancelled; the program and its workers were stopped", e.exit_code,
                            str(e.run_dir) if e.run_dir else None) from None
    except MeasureFailed as e:
        progress.end(e.reason)
        raise ProfileFailed(e.reason, e.exit_code, str(e.run_dir)) from None
    except errors.StepscopeError as e:
        progress.end(str(e))
        raise ProfileFailed(str(e), e.exit_code) from None
    finally:
        profiling._IN_PROGRESS.pop(key, None)


def measure_result(doc: dict[str, Any], run_id: str) -> dict[str, Any]:
    """The editor's result of a measure run: its figures, and every string the client paints."""
    from ..measurement import present

    return {
        "runId": run_id,
        "runDir": doc.get("run_dir"),
        "kind": "measure",
        "msPerStep": doc.get("median_ms"),
        "iqrMs": doc.get("iqr_ms"),
        "noisy": bool(doc.get("noisy")),
        "passes": len(doc.get("raw_ms") or []),
        "machine": present.machine_label(doc.get("machine")),
        "summary": present.editor_summary(doc),
        "status": {"text": present.editor_status(doc),
                   "tooltip": "\n\n".join([present.editor_summary(doc), *present.editor_details(doc),
                                            f"run {run_id}"])},
        "verdict": doc.get("verdict"),
    }


# -- recorded runs -----------------------------------------------------------------------------------
def measure_document(ls: "StepscopeServer", params: dict[str, Any]) -> dict[str, Any]:
    """`stepscope/measure` {runId, against?, force?}: the run's measure.json for the panel, with
    the words of `panel_words` (`value_words`, `call_words`, `pace_words`, `ranks_words`,
    `verdict_words`). With `against` (another run id: the baseline), the comparison of the two
    recorded runs is merged in (ratio, ci95, verdict, verdict_detail, margin, values_match, baseline)
    with the baseline's measured passes as `compare_raw_ms`; a run
    measured with --compare/--against carries its own, and its baseline's passes are added when the
    history still has them."""
    roots = ls.roots()
    run_dir = ls.runs.folder_of(params.get("runId"), roots)
    doc = _read_measure(run_dir)
    doc["run_id"] = run_dir.name
    against = params.get("against")
    if against is not None:
        baseline_dir = ls.runs.folder_of(against, roots)
        comparison = compare_recorded(_root_of(run_dir), baseline_dir.name, run_dir.name,
                                      force=params.get("force") is True)
        summary = comparison.pop("baseline")
        comparison.pop("candidate")
        doc.update(comparison)
        doc["baseline"] = {**summary, "label": f"run {baseline_dir.name}"}
    doc.update(panel_words(doc))
    doc["tried"] = _tried(run_dir, doc)
    baseline_run = (doc.get("baseline") or {}).get("run")
    if doc.get("verdict") and isinstance(baseline_run, str):
        doc["compare_raw_ms"] = _measured_passes(_root_of(run_dir), baseline_run)
        doc["compare_label"] = (doc.get("baseline") or {}).get("label") or f"run {baseline_run}"
    return doc


def _tried(run_dir: Path, doc: dict[str, Any]) -> dict[str, str] | None:
    """A try run's change for the panel: its title, its verdict in the try's words, its diff."""
    from ..trying.change import Change
    from ..trying.present import beside_baseline, headline
    from ..trying.result import try_entry

    try:
        record = jsonio.read_json(run_dir / protocol.TRY)
        change = Change.from_dict(record["change"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as e:
        log.warning("run %s: its %s cannot be read: %s", run_dir.name, protocol.TRY, e)
        return None
    if doc.get("verdict") is None:
        words = "not measured to its end: no verdict"
    else:
        entry = try_entry(str(record.get("name")), change, {**doc, "run_dir": str(run_dir)})
        words = headline(beside_baseline(entry, doc.get("baseline")))
    return {"title": change.title, "words": words, "diff": change.diff()}


def panel_words(doc: dict[str, Any]) -> dict[str, str | None]:
    """What the panel shows of a measure document as text, in the CLI's and the tooltip's words:
    what the step computed, a --function step's call itself, when the median is not the pace, under
    a launcher each rank's median, and a comparison's verdict with its margin."""
    from ..measurement import present

    return {"value_words": present.step_values(doc), "call_words": present.call_words(doc),
            "pace_words": present.pace_words(doc), "ranks_words": present.ranks_words(doc),
            "verdict_words": present.verdict_words(doc) if doc.get("verdict") else None}


def _read_measure(run_dir: Path) -> dict[str, Any]:
    path = run_dir / protocol.MEASURE
    try:
        doc = jsonio.read_json(path)
    except FileNotFoundError:
        status = {}
        try:
            status = jsonio.read_json(run_dir / protocol.STATUS)
        except (OSError, ValueError):
            pass
        why = (f"it ended {status.get('status')}: {status.get('reason')}" if isinstance(status, dict)
               and status.get("status") not in (None, "complete") else "it is not a measure run, or has not ended")
        raise errors.UsageError(f"run {run_dir.name} has no measurement: {why}") from None
    except (OSError, ValueError) as e:
        raise errors.UsageError(f"run {run_dir.name}: its measure.json cannot be read: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("raw_ms"), list):
        raise errors.UsageError(f"run {run_dir.name}: its measure.json holds no measured passes")
    return doc


def _measured_passes(root: Path, run_id: str) -> list[float] | None:
    """A recorded run's measured (or, for a profile run, unprofiled) passes, pooled; None when the
    history does not have them."""
    from ..history.store import History, db_path

    if not db_path(root).is_file():
        return None
    try:
        with History.open(root) as history:
            return [ms for process in history.side(run_id).runs_ms for ms in process]
    except errors.StepscopeError:
        return None


def compare_recorded(root: Path, baseline_id: str, candidate_id: str, *, force: bool = False) -> dict[str, Any]:
    """`stepscope runs compare BASELINE CANDIDATE` of the editor: the same comparison, from the same
    history (indexed from the run folders first when it is missing). Refusals are one-line
    StepscopeErrors (REFUSED for machine or scope, USAGE for a run without timed passes)."""
    from ..history import index
    from ..history.store import History, db_path
    from ..measurement.compare import NotComparable

    if not db_path(root).exists() and index.run_folders(root):
        index.rebuild(root)
    with History.open(root) as history:
        for run_id in (baseline_id, candidate_id):
            if history.get(run_id) is None:  # made before the history, or its row was lost: index it now
                index.record_run(root, root / workspace.STATE_DIR / workspace.RUNS_DIR / run_id)
        try:
            return history.compare(baseline_id, candidate_id, force=force)
        except NotComparable as e:
            # the client offers to compare anyway (`force`), as the CLI's --force does
            raise errors.StepscopeError(f"not comparable: the runs differ in {e}", errors.REFUSED) from None


def compare_markdown(root: Path, baseline: tuple[str, str], candidate: tuple[str, str], *,
                     force: bool = False) -> dict[str, Any]:
    """`stepscope/compareRuns` when a side is a measure run: {markdown, comparison}. A profile run's
    side is its steps timed without the profiler after its window (what it has that a measure run
    can be set beside); one without them is refused, saying so."""
    from ..measurement.present import comparison_markdown

    (baseline_id, baseline_kind), (candidate_id, candidate_kind) = baseline, candidate
    try:
        comparison = compare_recorded(root, baseline_id, candidate_id, force=force)
    except errors.UsageError as e:
        if "profile" in (baseline_kind, candidate_kind) and "has no steps timed without the profiler" in str(e):
            raise errors.UsageError(f"{e}: a measure run compares with a profile run's steps timed without the "
                                    "profiler after its window, and this profile run has none") from None
        raise
    note = None
    if "profile" in (baseline_kind, candidate_kind):
        note = ("The profile run's side is its steps timed without the profiler after its window (its unprofiled "
                "ms/step), not its profiled steps: the profiler's own cost is in neither side.")
    return {"markdown": comparison_markdown(comparison, note), "comparison": comparison}


def _root_of(run_dir: Path) -> Path:
    return run_dir.parent.parent.parent
