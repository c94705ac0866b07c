"""The analysis report: `analyze(paths) -> dict`, in the shape of the CLI contract (`--json`), typed
and versioned in model.py (`Report`, `SCHEMA_VERSION`, the shipped `report.schema.json`).

Invariants:
- The headline `ms_per_step` is the median of the active steps' elapsed times (see steps.py), never
  a sum of events; `steps` lists every active step. A trace without step markers is one window
  (`steps` empty, `ms_per_step` null, figures per window; see steps.py), never a made-up step.
- Every figure is per active step and comes from one named machine (`machine`, with its `source`).
- Missing data is said, not zero-filled: `gpu.observed` false with a reason, `gpu_ms` null, and
  `notes` listing what the trace lacks.
- Paths in the report are absolute; the file table `files` lists them once, relative to the source
  root where they lie under it, and every object pointing at a line has its `file_id` (model.py).
- Steps come from CPU `ProfilerStep#N` markers; only when a trace has none, from the markers on a
  GPU stream (their `cpu_ms` is null and `notes` says where the steps came from; see steps.py).
- Bad input raises `NotATraceError` / `UsageError` (a class per reason, errors.py) with a one-line
  reason; what the reader left out of a trace it read (events without a usable time, ids beyond
  int64) is said in `notes`, never dropped silently.
- Beyond the contract's shape: `evidence` (the trace facts the findings read) and `missing_labels`
  (region labels written in the step's source but absent from the window); see docs/findings.md.
- `unprofiled` / `distortion` come from the steps the agent timed without the profiler after the
  window (the run folder's timings record; distortion.py); null for a trace without one.
- `step_definition` says which step the figures are of (a loop's iteration, a function's call, or
  one optimizer step of several calls) and `time_split` whose code its time runs in (step_scope.py,
  ownership.py); both null for a trace without the run's records.

A folder of per-rank traces gives one report: the figures of the lowest rank (the headline), and
`ranks` with every rank's own ms/step, GPU time and top lines, plus `slowest_rank` (the rank the others wait for, when
they wait in collectives) and `rank_wait` (ranks.py); where
each rank ran (`nodes`), and the hosts' clocks aligned from their collectives (`clocks`; nodes.py,
clocks.py). In a run folder of a launched run (`--launcher`, `--nproc N`), each rank's trace is read
with that rank's own file table and scenario record; the headline's `scenario` is the run's
scenario.json.
"""

from __future__ import annotations

import re
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from .. import jsonio
from ..agent.protocol import COMPILE, FILES, RECORDS, SCENARIO, TIMINGS, parse_label, parse_run_file_name, run_file_name
from ..errors import EmptyTrace, NotAProfilerTrace, NotATraceError, NotJSON, UsageError
from ..textsafe import shorten
from ..trace import Kind, Trace, read_trace
from ..trace.model import MAX_TIME_US
from ..trying.variants import describe_variants
from . import parallel
from .attribution import Attribution, attribute
from .distortion import add_line_estimates, distortion, unprofiled_figures
from .findings import Thresholds, find, load_thresholds, missing_labels
from .findings.evidence import evidence_window, merge_evidence, moment_evidence, operator_evidence
from .intervals import clip, union_length
from .step_contents import describe_step
from .step_scope import define_step, time_split
from .compiled_code import compile_events
from .labels import FileTable, FrameResolver, load_file_table
from .line_calls import few_calls_notes
from .links import Links, build_links
from .machine import describe_machine, gpu_observation, machine_notes
from .clocks import collective_events
from .model import attach_files
from .nodes import name_ranks, summarize_nodes
from .panel import timeline_json
from .timeline import SpanTable, build_spans
from .ranks import order_by_rank, summarize_ranks
from .steps import (GPU_MARKERS_NOTE, Step, find_steps, gpu_marker_steps, ms_per_step, step_notes, whole_window,
                    window_note)


def trace_paths(path: Path) -> tuple[list[Path], Path | None]:
    """The trace files named by a CLI argument, and the run folder when it is one.

    A file is taken as given. In a run folder (it holds `files.json`) only its traces are (named by
    the run contract: trace.json(.gz), trace-1.json, trace-rank1.json, ...); in any other folder
    every `.json` / `.json.gz` but a run folder's own records is.
    """
    path = Path(path)
    try:
        if not path.exists():
            raise UsageError(f"no such file or folder: {path}")
        if not path.is_dir():  # a file, or a device / pipe: the reader says what it holds
            run_dir = path.parent if (path.parent / FILES).is_file() else None
            return [path], run_dir
        run_dir = path if (path / FILES).is_file() else None
        found = sorted(
            p for p in path.iterdir()
            if p.is_file() and p.name not in RECORDS and (p.name.endswith(".json") or p.name.endswith(".json.gz"))
            and (run_dir is None or parse_run_file_name(p.name).is_trace)
        )
    except PermissionError:  # the folder, or one on the way to it, that this user may not read
        raise UsageError(f"cannot read {path}: permission denied") from None
    if not found:
        raise UsageError(f"no trace (.json / .json.gz) in folder: {path}")
    return found, run_dir


def _read_scenario(run_dir: Path | None, name: str = SCENARIO) -> dict[str, Any] | None:
    if run_dir is None or not (run_dir / name).is_file():
        return None
    try:
        doc = jsonio.read_json(run_dir / name)
    except (OSError, ValueError) as e:
        raise UsageError(f"{run_dir / name}: cannot read the scenario record ({e})") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{run_dir / name}: the scenario record is not a JSON object")
    return doc


def _records_of(trace: Path, run_dir: Path | None, file_table: FileTable | None,
                scenario: dict[str, Any] | None) -> tuple[FileTable | None, dict[str, Any] | None]:
    """The file table and scenario record to read `trace` with: for one rank's trace of a distributed
    capture, that rank's own (files-rank<r>.json, scenario-rank<r>.json) when the run folder has them;
    the run's scenario.json stays the record of the rank it was made from (its `distributed.rank`)."""
    rank = parse_run_file_name(trace.name).rank
    if run_dir is None or rank is None:
        return file_table, scenario
    table_path = run_dir / run_file_name(FILES, rank)
    own_table = load_file_table(table_path) if table_path.is_file() else file_table
    if scenario is not None and (scenario.get("distributed") or {}).get("rank") == rank:
        return own_table, scenario
    return own_table, _read_scenario(run_dir, run_file_name(SCENARIO, rank)) or scenario


def analyze(paths: list[Path], *, source_root: Path | None = None, run_dir: Path | None = None,
            timelines: dict[Path, bytes] | None = None) -> dict:
    """Analyse one trace (or several per-rank traces of one run) into the report. With `timelines`,
    also each trace's timeline document for the trace panel (panel.py), by trace path."""
    if not paths:
        raise UsageError("no trace given")
    files: list[Path] = []
    from_folder: set[Path] = set()  # files found by listing a folder, not named by the caller
    for p in paths:
        found, found_run = trace_paths(Path(p))
        files.extend(found)
        if Path(p).is_dir():
            from_folder.update(found)
        if run_dir is None:
            run_dir = found_run
    run_dir = Path(run_dir).resolve() if run_dir is not None else None
    file_table = load_file_table(run_dir / FILES) if run_dir and (run_dir / FILES).is_file() else None
    scenario = _read_scenario(run_dir)
    root = Path(source_root).resolve() if source_root is not None else None

    shown_root = root or (file_table.root if file_table else None)
    # the pyproject.toml of the run's step file, within the workspace: the one its static checks use
    step_file = ((scenario or {}).get("step") or {}).get("file")
    config_start = Path(step_file) if isinstance(step_file, str) and Path(step_file).is_absolute() else shown_root
    thresholds, config_notes = load_thresholds(config_start if shown_root else None, within=shown_root)
    reports: list[dict] = []
    skipped: list[str] = []
    errors: list[NotATraceError] = []
    collectives: dict[str, Any] = {}  # each trace's collectives, by its path (clocks.py)
    for f in files:
        own_table, own_scenario = _records_of(f, run_dir, file_table, scenario)
        try:
            reports.append(_analyze_one(read_trace(f), file_table=own_table, source_root=root, scenario=own_scenario,
                                        thresholds=thresholds, timelines=timelines,
                                        timings=_timings_of(f, run_dir), collectives=collectives,
                                        compile_doc=_compile_records(f, run_dir)))
        except NotATraceError as e:
            if f not in from_folder:
                raise
            # a folder may hold other JSON beside its traces: say what was left out, go on
            skipped.append(str(e))
            errors.append(e)
    if not reports:
        # the reason of a file that is a trace (truncated, invalid, empty) says more than "this is not a trace"
        traces_only = [e for e in errors if not isinstance(e, (NotAProfilerTrace, NotJSON))]
        raise (traces_only or errors)[0]
    files = [r["traces"][0] for r in reports]  # already absolute (a pipe's name is kept as given)
    named = name_ranks(reports, [Path(f).name for f in files]) if len(reports) > 1 else []
    reports = order_by_rank(reports)
    report = reports[0]
    # before the headline's `traces` becomes the list of every trace: each rank's entry names its own
    rank_summary = summarize_ranks(reports, thresholds) if len(reports) > 1 else None
    if rank_summary is not None:
        collectives = {str(Path(p).resolve()): c for p, c in collectives.items()}  # as each rank's entry names it
        nodes, clocks, node_notes = summarize_nodes(reports, rank_summary[0], collectives)
    report["traces"] = files
    report["source_root"] = str(shown_root) if shown_root else None
    report["notes"].extend(f"left out: {reason}" for reason in skipped)
    if rank_summary is not None:
        report["ranks"], report["slowest_rank"], report["rank_wait"], rank_notes = rank_summary
        report["notes"].extend(named + rank_notes + node_notes)
        report["clocks"] = clocks
        if nodes is not None:
            report["nodes"] = nodes
    report["missing_labels"], label_notes = missing_labels(report)
    report["notes"].extend(config_notes + label_notes)
    report["step_contents"] = describe_step(report)
    report["findings"] = find(report, thresholds)
    describe_variants(report)  # what each finding can try (`stepscope try`, docs/try.md)
    return attach_files(report)


def _compile_records(trace: Path, run_dir: Path | None) -> dict[str, Any] | None:
    """The run's torch.compile records for `trace` (compile.json, per rank), None without them. A
    record that cannot be read is left out (the report's notes say the graphs were not attributed)."""
    if run_dir is None:
        return None
    path = run_dir / run_file_name(COMPILE, parse_run_file_name(trace.name).rank)
    if not path.is_file():
        return None
    try:
        doc = jsonio.read_json(path)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _lines_not_split(scenario: dict[str, Any] | None, file_table: FileTable | None) -> list[str]:
    """What the agent left whole to bound its own cost (`observed.lines_not_split`), said per function."""
    record = ((scenario or {}).get("observed") or {}).get("lines_not_split")
    if not isinstance(record, dict) or not record.get("functions"):
        return []
    cost_us, step_ms = record.get("region_cost_us"), record.get("step_ms")
    out = []
    for entry in record["functions"]:
        ss = parse_label(str(entry.get("function", "")))
        path = file_table.resolve(ss.file_id) if (ss and file_table) else None
        where = f"{Path(path).name}:{ss.line}" if (path and ss) else str(entry.get("function"))
        regions = entry.get("regions_per_step")
        if "hot_calls" in record:  # decided from counts
            rule = (f"a function called at least {record['hot_calls']} times a step with {record['hot_regions']} "
                    "regions or more is left whole, decided from counts so that every run of this code gets the "
                    "same lines")
            if isinstance(cost_us, (int, float)) and isinstance(regions, (int, float)):
                rule += f"; at about {cost_us} µs each they would cost ~{regions * cost_us / 1000:.2f} ms a step"
                if isinstance(step_ms, (int, float)) and step_ms > 0:
                    rule += f" of its {step_ms} ms"
        else:  # a run recorded before the decision was made from counts: from the priced regions
            rule = (f"at about {cost_us} µs each they would cost more than "
                    f"{round(100 * float(record.get('budget', 0)))}% of the {step_ms} ms step")
        out.append(
            f"the function at {where} runs {entry.get('calls_per_step')} times per step: its statements were not "
            f"split into lines ({regions} regions per step; {rule}); its time stays on the line that calls it "
            "(--all-lines splits it anyway)")
    return out


def _capture_notes(scenario: dict[str, Any] | None, att: Attribution) -> list[str]:
    """A light capture (`observed.capture`, agent/profiling.py) recorded no CPU operators: what each
    line's backward cost could only be read from is absent, so it is said as not observed (None),
    never as 0; and the notes say what the capture holds."""
    capture = ((scenario or {}).get("observed") or {}).get("capture")
    if not isinstance(capture, dict):
        return []
    if not capture.get("light"):
        return [f"--light was asked, but {capture.get('why_not') or 'this torch cannot observe user scopes only'}: "
                "the capture was full"]
    for line in att.lines:
        line["backward_ms"] = None
        if "backward_gpu_ms" in line:
            line["backward_gpu_ms"] = None
    return ["light capture (--light): CPU operators were not recorded, so no operator figures, input shapes, "
            "stacks or backward by line; each line's wall time, GPU time, kernels and copies are recorded as in a "
            "full capture, with less of the profiler's own cost"]


def _agent_notes(scenario: dict[str, Any] | None) -> list[str]:
    """What the agent said of the run: the workspace modules it ran as they are, because their rewrite
    did not compile (kind "instrument", agent/program.py), and a window that ended before all its
    active steps ran (kind "window", agent/main.py)."""
    return [str(note["detail"]) for note in (scenario or {}).get("notes") or []
            if isinstance(note, dict) and note.get("kind") in ("instrument", "window") and note.get("detail")]


def _timings_of(trace: Path, run_dir: Path | None) -> dict[str, Any] | None:
    """The steps the agent that wrote `trace` timed without the profiler after its window
    (timings.json, per rank timings-rank<r>.json), or None."""
    if run_dir is None:
        return None
    path = run_dir / run_file_name(TIMINGS, parse_run_file_name(trace.name).rank)
    try:
        doc = jsonio.read_json(path) if path.is_file() else None
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def active_steps(trace: Trace, links: Links, steps_run: int | None = None) -> tuple[list[Step], bool, bool]:
    """The steps the figures are per: (steps, stepless, gpu_marked). Steps from the CPU markers; else
    from the markers on a GPU stream (gpu_marked); else the whole trace as one window (stepless:
    figures per window, no ms/step). Raises NotATraceError when that window is empty.

    `steps_run` (a run's scenario record): the steps the agent counted. A loop whose data ran out
    inside the window leaves one more marker in the trace, holding only the `next()` that found the
    data exhausted (torch's profiler begins a step at each boundary): a ProfilerStep#N with N at
    or past `steps_run` is no step."""
    steps = find_steps(trace, links)
    if steps_run is not None and steps:
        ran = [s for s in steps if (n := _step_number(s.name)) is None or n < steps_run]
        if not ran:
            raise EmptyTrace(trace.path, f"no active step ran: {steps[0].name} holds only the loop's last next(), "
                                         "which found the data exhausted")
        steps = ran
    # markers only on a GPU stream (no CPU thread holds one): steps complete on the GPU (steps.py)
    gpu_marked = not steps and bool(links.gpu_step_rows)
    if gpu_marked:
        steps = gpu_marker_steps(trace, links)
    # no step markers: the whole trace is one window (not a step): figures are per window, no ms/step
    stepless = not steps
    if stepless:
        window = whole_window(trace, links)
        if window is None:
            raise EmptyTrace(trace.path, "no ProfilerStep#N events and the trace spans no time")
        steps = [window]
    if steps[-1].completion <= steps[0].cpu_start:
        raise EmptyTrace(trace.path, "the active window is empty (its steps have no duration)")
    return steps, stepless, gpu_marked


_STEP_NUMBER = re.compile(r"^ProfilerStep#(\d+)$")


def _step_number(name: str) -> int | None:
    m = _STEP_NUMBER.match(name)
    return int(m.group(1)) if m else None


def _steps_run(scenario: dict[str, Any] | None) -> int | None:
    """The steps a run's agent counted (its step k is the trace's ProfilerStep#k), None without a
    record of them."""
    if not isinstance(scenario, dict):
        return None
    n = scenario.get("steps_run")
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else None


def timeline_spans(trace_path: Path) -> SpanTable:
    """The trace panel's span table of one trace of a run folder (or a trace alone), read with the
    records and options its analysis uses (`analyze(..., timelines=...)`), for a timeline of any range
    at any level (timeline.summarize) or the whole document (panel.document_of)."""
    (path,), run_dir = trace_paths(Path(trace_path))
    run_dir = Path(run_dir).resolve() if run_dir is not None else None
    file_table = load_file_table(run_dir / FILES) if run_dir and (run_dir / FILES).is_file() else None
    own_table, own_scenario = _records_of(path, run_dir, file_table, _read_scenario(run_dir))
    thresholds, _ = load_thresholds(file_table.root if file_table else None)
    trace = read_trace(path)
    links = build_links(trace)
    steps, stepless, _ = active_steps(trace, links, _steps_run(own_scenario))
    return build_spans(trace, links, steps, file_table=own_table, source_root=None,
                       per="window" if stepless else "step", batch_read_patterns=thresholds.batch_read_patterns)


def _analyze_one(trace: Trace, *, file_table: FileTable | None, source_root: Path | None,
                 scenario: dict[str, Any] | None, thresholds: Thresholds = Thresholds(),
                 timelines: dict[Path, bytes] | None = None, timings: dict[str, Any] | None = None,
                 collectives: dict[Path, Any] | None = None, compile_doc: dict[str, Any] | None = None) -> dict:
    links = build_links(trace)
    steps, stepless, gpu_marked = active_steps(trace, links, _steps_run(scenario))
    window_us = (steps[0].cpu_start, steps[-1].completion)
    if collectives is not None:  # what the clocks of several ranks are aligned from (clocks.py)
        collectives[trace.path] = collective_events(trace, links, window_us)
    # On a large trace the longest parts are computed in forked children while this process does
    # the rest: the evidence's operator half (the trace facts the findings read: operators,
    # kernels, copies, syncs), and, with a third core, the attribution, which needs no evidence.
    large = len(trace) >= parallel.MIN_EVENTS
    # the trace panel's timeline (with `timelines`), in a child too on a large trace
    timeline = parallel.alongside(timeline_json, trace, links, steps, per="window" if stepless else "step",
                                  file_table=file_table, source_root=source_root,
                                  batch_read_patterns=thresholds.batch_read_patterns,
                                  worth_it=large) if timelines is not None else nullcontext()
    with timeline, parallel.alongside(attribute, trace, links, steps, file_table=file_table, source_root=source_root,
                                      compile_doc=compile_doc,
                                      worth_it=large and parallel.cores() >= 3) as attribution:
        win = evidence_window(trace, links, steps, file_table=file_table, source_root=source_root,
                              batch_read_patterns=thresholds.batch_read_patterns)
        with parallel.alongside(operator_evidence, trace, links, win, worth_it=large) as ops:
            moments = moment_evidence(trace, links, steps, win, file_table)
            att = attribution.result()
            report = _report(trace, links, steps, att, file_table=file_table, scenario=scenario,
                             stepless=stepless, gpu_marked=gpu_marked, window_us=window_us, timings=timings)
            report["compiled_code"] = _compiled_code(att, compile_doc, file_table, source_root)
            report["evidence"] = merge_evidence(ops.result(), moments)
        if timelines is not None:
            timelines[trace.path] = timeline.result()
    return report


def _report(trace: Trace, links: Links, steps: list[Step], att: Attribution, *,
            file_table: FileTable | None, scenario: dict[str, Any] | None, stepless: bool, gpu_marked: bool,
            window_us: tuple[float, float], timings: dict[str, Any] | None = None) -> dict:
    """The report of one trace, but for its evidence (computed alongside: its key is held as None
    in its place)."""
    gpu = gpu_observation(trace, links, scenario)
    headline = None if stepless else ms_per_step(steps)
    batch = scenario.get("batch_size") if scenario else None
    samples = round(batch / headline * 1000.0, 2) if isinstance(batch, (int, float)) and batch > 0 and headline else None
    startup = (scenario or {}).get("startup")
    if not isinstance(startup, dict):
        startup = {"to_first_step_ms": None, "first_steps_ms": []}
    schedule = (scenario or {}).get("schedule")
    if not isinstance(schedule, dict):
        schedule = {"wait": None, "warmup": None, "active": 0 if stepless else len(steps), "repeat": None, "source": "trace"}
    notes = [window_note(trace, links, steps[0])] if stepless else []
    notes.extend(left_out_notes(trace))
    notes.extend(machine_notes(trace))
    for track in sorted(links.shared_tracks):
        pid, tid = trace.tracks[track]
        notes.append(f"device events were recorded on the CPU thread pid {pid}, tid {tid}: read as GPU work "
                     "(not drawn as a stream in the trace panel), and the thread's own events as that thread's")
    if gpu_marked:
        notes.append(GPU_MARKERS_NOTE)
    if not stepless:
        notes.extend(step_notes(steps))
    if not gpu["observed"]:
        notes.append(gpu["reason"])
    notes.extend(unlinked_notes(att))
    if att.backward_link == "unavailable":
        notes.append("backward ops cannot be linked to forward lines (no fwdbwd flows, no sequence numbers)")
    if file_table is None and any(r["label"].startswith("ss:") for r in att.regions):
        notes.append("Stepscope region labels found but no file table (files.json): lines are not resolved")
    notes.extend(_capture_notes(scenario, att))
    notes.extend(_lines_not_split(scenario, file_table))
    notes.extend(few_calls_notes(att.lines, len(steps)) if not stepless else [])
    notes.extend(_agent_notes(scenario))
    notes.extend(att.compiled_notes)
    if not att.lines:
        notes.append("no figure could be attributed to a source line (no Stepscope labels and no user-code "
                     "Python frames; pass --source-root for traces recorded with stacks)")
    unprofiled = None if stepless else unprofiled_figures(timings)
    profiled = round(headline, 4) if headline is not None else None
    ratio = distortion(profiled, unprofiled)
    add_line_estimates(att.lines, profiled_ms=profiled, unprofiled=unprofiled,
                       events_per_step=(att.ops_in_window + att.kernels_in_window) / max(1, len(steps)),
                       steps_ms=[s.ms for s in steps] if not stepless else [])
    return {
        "traces": [str(trace.path)],
        "machine": describe_machine(trace, scenario),
        "scenario": scenario or {},
        "schedule": schedule,
        "gpu": gpu,
        "startup": startup,
        "steps": [{"name": s.name, "ms": round(s.ms, 4), "cpu_ms": _cpu_ms(s)} for s in steps] if not stepless else [],
        "ms_per_step": profiled,
        "samples_per_s": samples,
        "unprofiled": unprofiled,
        "distortion": round(ratio, 4) if ratio is not None else None,
        "lines": att.lines,
        "regions": att.regions,
        "step_definition": (definition := define_step(scenario, file_table)),
        "time_split": time_split(att.time_split, definition, "window" if stepless else "step"),
        "findings": [],
        "window": {"ms": round((window_us[1] - window_us[0]) / 1000.0, 4), "steps": 0 if stepless else len(steps),
                   "per": "window" if stepless else "step",
                   # the step every per-step figure and share is of: the steps tile the window
                   "mean_step_ms": None if stepless else round((window_us[1] - window_us[0]) / 1000.0 / len(steps), 4),
                   "events": len(trace), "trace_bytes": trace.size_bytes,
                   "gpu_ms": _gpu_busy_ms(trace, links, window_us, len(steps)),
                   "collective_ms": _gpu_busy_ms(trace, links, window_us, len(steps), only=_COLLECTIVE),
                   "host_collective_ms": _host_collective_ms(trace, links, window_us, len(steps))},
        "attribution": {"gpu_events": att.gpu_events, "gpu_unlinked": att.gpu_unlinked,
                        "gpu_launched_before": att.gpu_launched_before, "backward_link": att.backward_link},
        "evidence": None,
        "notes": notes,
    }


def unlinked_notes(att: Attribution) -> list[str]:
    """What the report says of GPU events without a launch call: those launched before the trace's
    first launch call (the host ran ahead of the device, and work it queued before the window ran
    in it) apart from the others."""
    before, other = att.gpu_launched_before, att.gpu_unlinked - att.gpu_launched_before
    notes = []
    if before:
        notes.append(f"{before} of {att.gpu_events} GPU events were launched before the trace's first launch call "
                     "(work the host queued ahead of the device before the window): where they ran inside the window "
                     "they count in its steps' time, and on no line")
    if other:
        notes.append(f"{other} {'more ' if before else ''}of {att.gpu_events} GPU events have no launch call in the "
                     "trace: they count in step time but are attributed to no line")
    return notes


def _compiled_code(att: Attribution, compile_doc: dict[str, Any] | None, file_table: FileTable | None,
                   source_root: Path | None) -> dict[str, Any] | None:
    """The report's `compiled_code`: the compiled graphs' attribution, and the compilations and graph
    breaks torch recorded (None when the window ran no compiled graph and torch recorded neither)."""
    compilations, breaks = compile_events(compile_doc, FrameResolver(source_root or (file_table.root if file_table else None),
                                                                     file_table))
    if att.compiled is None and not compilations and not breaks:
        return None
    return {**(att.compiled or {"source": None, "graphs_called": 0}), "compilations": compilations,
            "graph_breaks": breaks}


def left_out_notes(trace: Trace) -> list[str]:
    """What the reader left out of the trace or changed, and why (nothing for a clean trace)."""
    notes = []
    no_time = trace.skipped.get("X", 0)
    if no_time:
        notes.append(f"{no_time} complete event(s) left out: their ts is missing, null or not a number "
                     "(a ProfilerStep#N among them does not count as a step)")
    if trace.times_out_of_range:
        notes.append(f"{trace.times_out_of_range} complete event(s) left out: their ts or dur lies beyond "
                     f"±{MAX_TIME_US:.0f} µs (2^53 µs, about 285 years), no time a profiler writes")
    if trace.negative_durations:
        notes.append(f"{trace.negative_durations} complete event(s) with a negative dur, read as 0 µs")
    if trace.shapes_too_deep:
        notes.append(f"{trace.shapes_too_deep} operator(s) with Input Dims nested hundreds of levels deep: "
                     "no shapes are shown for them")
    if trace.ids_out_of_range:
        notes.append(f"{trace.ids_out_of_range} id(s) or byte count(s) outside the signed 64-bit range (correlation, External id, "
                     "Sequence number, bytes, flow id), read as absent: the events they would link are not linked")
    if trace.unreadable_durations:
        named = ", ".join(f"{_event_name(name)} at ts {ts:.0f} µs" for name, ts in trace.unreadable_examples)
        notes.append(f"{trace.unreadable_durations} complete event(s) whose dur is not a number (a string, true, "
                     f"NaN), read as 0 µs: {named}{_more(trace.unreadable_durations, trace.unreadable_examples)}")
    if trace.implausible_times:
        named = ", ".join(f"{_event_name(name)} (ts {ts:.0f} µs, dur {dur:.0f} µs)"
                          for name, ts, dur in trace.implausible_examples)
        notes.append(f"{trace.implausible_times} complete event(s) left out: they start or end more than a day away "
                     "from the trace's other events (ts and dur swapped, or a corrupted time), no time of the window: "
                     f"{named}{_more(trace.implausible_times, trace.implausible_examples)}")
    if trace.later_event_array is not None:
        notes.append(f"the trace names traceEvents twice: only the first array was read, the later one "
                     f"({trace.later_event_array} events) was left out")
    return notes


def _event_name(name: str) -> str:
    return repr(shorten(name)) if name else "an event without a name"


def _more(count: int, named: list) -> str:
    return f" and {count - len(named)} more" if count > len(named) else ""


def _cpu_ms(step: Step) -> float | None:
    """The step's CPU span; unknown (None) for steps read from GPU-stream markers."""
    return None if step.from_gpu_markers else round((step.cpu_end - step.cpu_start) / 1000.0, 4)


#: collective-communication kernels (NCCL, and RCCL on ROCm): their time includes waiting for the
#: other ranks to arrive
_COLLECTIVE = re.compile(r"^(nccl|rccl)", re.IGNORECASE)


#: collective operations as the host records them (gloo's, and NCCL's host side): a gloo collective's
#: event lasts until every rank has arrived
_HOST_COLLECTIVE = re.compile(r"^(gloo|nccl|rccl|mpi|ucc|hccl|xccl):", re.IGNORECASE)


def _host_collective_ms(trace: Trace, links: Links, window_us: tuple[float, float], n_steps: int) -> float:
    """Time per step any CPU thread spent in a collective operation (union over threads, in the window)."""
    names = frozenset(i for i, name in enumerate(trace.names) if _HOST_COLLECTIVE.match(name))
    if not names:
        return 0.0
    rows = [r for r in trace.rows_named(names)
            if trace.kind[r] in (Kind.ANNOTATION, Kind.CPU_OP) and trace.track[r] not in links.device_tracks]
    busy = union_length(clip(((trace.ts[r], trace.end(r)) for r in rows), *window_us))
    return round(busy / 1000.0 / n_steps, 4)


def _gpu_busy_ms(trace: Trace, links: Links, window_us: tuple[float, float], n_steps: int,
                 only: re.Pattern | None = None) -> float | None:
    """Time any GPU work (or only the kernels named like `only`) ran in the window (union over
    streams) per step; None without GPU events."""
    if not links.gpu_rows:
        return None
    rows = links.gpu_rows
    if only is not None:
        names = frozenset(i for i, name in enumerate(trace.names) if only.match(name))
        rows = [g for g in rows if trace.name[g] in names and trace.kind[g] == Kind.KERNEL] if names else []
    busy = union_length(clip(((trace.ts[g], trace.end(g)) for g in rows), *window_us))
    return round(busy / 1000.0 / n_steps, 4)
