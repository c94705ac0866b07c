"""`stepscope try`: a change measured before anyone edits a file (docs/try.md).

    stepscope try RUN --finding KIND[@FILE:LINE] [--variant NAME ...]   a finding's variants
    stepscope try SCRIPT --fix CODE@[FILE:]LINE                          a static rule's quick fix
    stepscope try SCRIPT --patch FILE                                    a unified diff
    stepscope try TRY_RUN --apply                                        apply a try's measured change

Pipeline (`try_changes`, the one the editor's Try this fix runs too): the change(s) → one scratch
copy of the workspace per change (capture.scratch: the user's files are never written) → the step
of the workspace as it is (the baseline, in place) and of each copy measured in processes that take
turns (measurement.compare.rotated_order: same seed, same warm-up and passes, `measure --against`'s
sides and documents: commands.measure) → each change's run folder (kind `try`: try.json with the
change, measure.json with its comparison against the baseline) → the try document (trying.result)
→ text or one JSON document. With `--apply`, the best change (faster, same results) is written into
the workspace, atomically, only if its files are as they were tried.

Exit codes as `measure`: 2 usage (an unknown run, finding, variant, rule, or a patch that does not
apply), 3 the program failed (on either side), 4 the time limit, 6 no step; 5 refused: applying a
change whose files changed since the try, or whose results changed without --accept-changed-results;
130 cancelled.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

from .. import errors
from . import measure, program
from .progress import Progress, on_step_events

_FINDING = re.compile(r"^(?P<kind>[a-z][a-z0-9-]*)(?:@(?P<file>.+):(?P<line>\d+))?$")
_FIX = re.compile(r"^(?P<code>SS\d{3})@(?:(?P<file>.+):)?(?P<line>\d+)$")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..agent.protocol import MeasureOptions
    from ..capture import options
    from ..capture.request import MeasureRunOptions, RunOptions

    program.add_arguments(p, metavar="RUN|SCRIPT", script_help=(
        "a profile run (with --finding), the script that holds the step (with --fix or --patch; as `measure` takes "
        "it), or a try run (with --apply alone)"))
    what = p.add_mutually_exclusive_group()
    what.add_argument("--finding", metavar="KIND[@FILE:LINE]",
                      help="try the variants of this finding of RUN (`stepscope runs show RUN` lists its findings)")
    what.add_argument("--fix", metavar="CODE@[FILE:]LINE",
                      help="try the quick fix of the static rule CODE at LINE (of SCRIPT, or of FILE)")
    what.add_argument("--patch", metavar="FILE", help="try the change a unified diff makes (as `git diff` writes it)")
    p.add_argument("--variant", action="append", metavar="NAME",
                   help="with --finding: try this variant only (repeat for several; default: every variant)")
    options.add_arguments(p, MeasureOptions, MeasureRunOptions)
    options.add_arguments(p, RunOptions, only=("timeout",))
    p.set_defaults(runs=None)  # measure.AGAINST_RUNS a side
    p.add_argument("--value", metavar="EXPR", help="the value of each pass compared between the sides (as `measure "
                                                   "--value`; default: the step's `loss`)")
    p.add_argument("--apply", action="store_true",
                   help="afterwards, write the best change (faster, same results) into the workspace; with a try run "
                        "alone, write that try's change")
    p.add_argument("--accept-changed-results", action="store_true",
                   help="with --apply: apply a change even though its values differ from the workspace's")
    p.add_argument("--json", action="store_true", help="print the result as one JSON document")
    p.add_argument("--progress", action="store_true",
                   help="a line on stderr per pass timed, warm-ups included: `stepscope: progress: DONE/TOTAL ...`")
    p.epilog = "Arguments after `--` are passed to the program (SCRIPT forms)."


def run(args: argparse.Namespace) -> int:
    from ..agent.protocol import MeasureOptions
    from ..capture import options
    from ..capture.request import MeasureRunOptions, RunOptions

    if args.finding is None and args.fix is None and args.patch is None:
        if not args.apply:
            raise errors.UsageError("say what to try: --finding KIND with a run, --fix CODE@LINE or --patch FILE with "
                                    "a script (or --apply with a try run)")
        return _apply_recorded(args)
    if args.variant and args.finding is None:
        raise errors.UsageError("--variant goes with --finding")
    if args.accept_changed_results and not args.apply:
        raise errors.UsageError("--accept-changed-results goes with --apply")
    if args.runs is None:
        args.runs = measure.AGAINST_RUNS
    measure.check_value(args.value)
    measure_options, run_options, measure_run = options.from_arguments(args, MeasureOptions, RunOptions,
                                                                       MeasureRunOptions)
    measure_options = dataclasses.replace(measure_options, value=args.value)
    if args.finding is not None:
        if args.line is not None or args.function or args.entry or args.module or args.script_args:
            raise errors.UsageError("with --finding, the run says the step and the program: --line, --function, "
                                    "--entry, -m and program arguments go with a SCRIPT")
        req, changes, source = finding_changes(args.script, args.finding, args.variant, measure_options, run_options,
                                               python=args.python)
    else:
        target = program.resolve(args)
        measure.check_value(args.value, loop=not target.function)
        req = measure.measure_request(target, measure_options, run_options)
        if args.fix is not None:
            changes, source = fix_changes(req, args.fix)
        else:
            changes, source = patch_changes(req, Path(args.patch))
    measure.real_run_note(req.root)
    measure.processes_note(measure_run.runs)
    from .profile import _cancel_on_signals

    per_process = req.measure.warmup + req.measure.passes
    progress = Progress((1 + len(changes)) * per_process * measure_run.runs, enabled=args.progress)
    progress.start(f"starting {req.target_file.name} for the code as it is (imports, data, model)")
    on_event = on_step_events(progress, lambda side, process, event: measure.pass_words(
        req, measure_run, process, event, side="the code as it is" if side == 0 else changes[side - 1].name))
    with _cancel_on_signals() as cancel:
        doc = try_changes(req, changes, measure_run, source=source, output=sys.stderr, cancel=cancel,
                          on_event=on_event)
    applied = _apply_best(req.root, doc, changes, args) if args.apply else None
    if applied is not None:
        doc["applied"] = applied
    _emit(doc, args)
    return errors.OK


# -- what to try ---------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Tried:
    """One change to try, and the name the try document gives it (a variant's, a rule's fix, `patch`)."""

    name: str
    change: Any  # trying.change.Change


def _read_text(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8", "surrogateescape")
    except (FileNotFoundError, IsADirectoryError):
        return None


def run_folder(ref: str) -> Path:
    """The run folder RUN names: a path to one, or a run of the history of the workspace here."""
    from .. import workspace
    from ..agent.protocol import SPEC
    from ..history.index import folder_path
    from ..history.store import History, db_path

    as_path = Path(ref)
    if as_path.is_dir() and (as_path / SPEC).is_file():
        return as_path.resolve()
    root = workspace.find_root(Path.cwd())
    if not db_path(root).exists():
        from ..history import index

        if not index.run_folders(root):
            raise errors.UsageError(f"no run {ref!r}: {root} has no runs (profile the step first)")
        index.rebuild(root)
    with History.open(root) as history:
        row = history.get(history.resolve(ref))
    folder = folder_path(row["folder"], root)
    if not (folder / SPEC).is_file():
        raise errors.UsageError(f"run {row['id']}: its folder {folder} is gone")
    return folder


def _run_records(run_dir: Path) -> tuple[Path, dict, dict]:
    """(workspace root, scenario, report) of a profile run."""
    from .. import jsonio
    from ..agent.protocol import FILES, REPORT, SCENARIO

    def read(name: str) -> Any:
        try:
            return jsonio.read_json(run_dir / name)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            raise errors.UsageError(f"run {run_dir.name}: its {name} cannot be read: {e}") from None

    report = read(REPORT)
    if not isinstance(report, dict):
        raise errors.UsageError(f"run {run_dir.name} has no report: only a profile run has findings to try")
    scenario = read(SCENARIO) or report.get("scenario") or {}
    files = read(FILES) or {}
    root = Path(files.get("root") or report.get("source_root") or run_dir.parent.parent.parent)
    return root, scenario, report


def _now_line(run_dir: Path, root: Path, path: Path, line: int, what: str) -> tuple[str, int]:
    """(the file's text now, the line that `line` of the text the run measured is on now)."""
    from .. import workspace
    from ..source.linemap import LineMap

    text = _read_text(path)
    if text is None:
        raise errors.UsageError(f"{path} is gone since run {run_dir.name}")
    measured = workspace.measured_texts(run_dir, root, [path]).get(workspace.relpath(path, root))
    if measured is None:
        raise errors.UsageError(f"{path.name} changed since run {run_dir.name}, and the text that run measured was not "
                                "kept: profile the step again")
    now = LineMap.between(measured, text).now(line - 1)
    if now is None:
        raise errors.UsageError(f"the code of {what} ({path.name}:{line}) changed since run {run_dir.name}: profile "
                                "the step again")
    return text, now + 1


def _choose_finding(report: dict, spec: str, run_dir: Path, root: Path) -> dict:
    from ..workspace import relpath

    match = _FINDING.match(spec)
    if match is None:
        raise errors.UsageError(f"--finding {spec!r}: give KIND or KIND@FILE:LINE (e.g. input-bound@train.py:69)")
    findings = report.get("findings") or []
    here = [f for f in findings if f.get("kind") == match["kind"]]
    if match["file"] is not None:
        wanted = Path(match["file"])
        here = [f for f in here if f.get("line") == int(match["line"]) and f.get("file")
                and (Path(f["file"]).as_posix().endswith(wanted.as_posix()) or Path(f["file"]).name == wanted.name)]

    def named(f: dict) -> str:
        where = f"@{relpath(Path(f['file']), root)}:{f['line']}" if f.get("file") and f.get("line") else ""
        return f"{f.get('kind')}{where}"

    if not here:
        listed = ", ".join(named(f) for f in findings) or "none"
        raise errors.UsageError(f"run {run_dir.name} has no finding {spec} (its findings: {listed})")
    if len(here) > 1:
        raise errors.UsageError(f"run {run_dir.name} has {len(here)} {match['kind']} findings "
                                f"({', '.join(named(f) for f in here)}): say which, as KIND@FILE:LINE")
    return here[0]


def finding_changes(ref: str, spec: str, names: Sequence[str] | None, measure_options, run_options, *,
                    python: str | None = None, run_dir: Path | None = None):
    """The request that measures RUN's step, the changes of its finding `spec` (its variants, or those
    named), and the try's `source` record."""
    from ..capture.request import CaptureRequest
    from ..measurement.scope import step_device
    from ..source.linemap import header_text
    from ..trying.change import Change
    from ..trying.variants import finding_variants
    from ..workspace import relpath

    run_dir = run_dir or run_folder(ref)
    root, scenario, report = _run_records(run_dir)
    if scenario.get("distributed"):
        raise errors.UsageError(f"run {run_dir.name} ran under a launcher: a try runs one process a side (try the "
                                "script with --fix or --patch)")
    finding = _choose_finding(report, spec, run_dir, root)
    step = scenario.get("step") or {}
    prog = scenario.get("program") or {}
    if not step.get("file") or (step.get("line") is None and not step.get("function")):
        raise errors.UsageError(f"run {run_dir.name} does not say its step (no scenario record)")
    step_file = Path(step["file"])
    step_line = step.get("line")
    step_text = _read_text(step_file)
    if step_text is None:
        raise errors.UsageError(f"{step_file} is gone since run {run_dir.name}")
    if step.get("function") is None:
        step_text, step_line = _now_line(run_dir, root, step_file, int(step_line), "the step loop")
    if not finding.get("file") or not finding.get("line"):
        raise errors.UsageError(f"the {finding.get('kind')} finding of run {run_dir.name} has no line: there is no code "
                                "to change")
    finding_file = Path(finding["file"])
    text, line = _now_line(run_dir, root, finding_file, int(finding["line"]), f"the {finding['kind']} finding")
    per_process = measure_options.warmup + measure_options.passes
    on_step_file = finding_file.resolve() == step_file.resolve()
    found = finding_variants({**finding, "line": line}, text if finding["kind"] != "dominant-op" else step_text,
                             step_line=step_line if (on_step_file or finding["kind"] == "dominant-op") else None,
                             device=step_device(scenario.get("observed")), steps=per_process,
                             cpus=(scenario.get("machine") or {}).get("cpu_count"))
    if not found.variants:
        raise errors.UsageError(f"the {finding['kind']} finding at {finding_file.name}:{line} has nothing to try: "
                                f"{found.reason}")
    variants = found.variants
    if names:
        known = {v.name for v in variants}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise errors.UsageError(f"the {finding['kind']} finding has no variant {', '.join(unknown)} (its variants: "
                                    f"{', '.join(sorted(known))})")
        variants = [v for v in variants if v.name in names]
    changed_file = step_file if finding["kind"] == "dominant-op" else finding_file
    changed_text = step_text if finding["kind"] == "dominant-op" else text
    rel = relpath(changed_file, root)
    changes = [Tried(v.name, Change.of_edits(v.title, {"kind": "finding", "finding": finding["kind"], "variant": v.name,
                                                        "run": run_dir.name, "file": rel, "line": line},
                                             rel, changed_text, v.edits, applicable=v.applicable, why_not=v.why_not))
               for v in variants]
    entry = prog.get("entry") or {}
    req = CaptureRequest(
        root=root, target_file=step_file, target_line=step_line, target_function=step.get("function"),
        target_micro_batch=bool(step.get("micro_batch")), python=python or prog.get("python") or sys.executable,
        entry_script=Path(entry["path"]) if entry.get("kind") == "script" and entry.get("path")
        and Path(entry["path"]).resolve() != step_file.resolve() else None,
        entry_module=entry.get("name") if entry.get("kind") == "module" else None,
        args=tuple(prog.get("args") or ()), cwd=Path(prog["cwd"]) if prog.get("cwd") else root,
        run=run_options, measure=measure_options,
        step_header=header_text(step_text, step_line) if step.get("function") is None else None,
        env_defaults={"PYTHONHASHSEED": str(measure_options.seed)})
    source = {"kind": "finding", "run": run_dir.name, "finding": finding["kind"], "file": str(finding_file),
              "line": line, "variants": [v.name for v in variants]}
    return req, changes, source


def fix_changes(req, spec: str) -> tuple[list[Tried], dict]:
    """The quick fix of `--fix CODE@[FILE:]LINE` as a change, and the try's `source` record."""
    from ..rules import check_source, load_config
    from ..trying.change import Change
    from ..trying.variants import code_fixes
    from ..workspace import relpath

    match = _FIX.match(spec)
    if match is None:
        raise errors.UsageError(f"--fix {spec!r}: give CODE@LINE or CODE@FILE:LINE (e.g. SS101@72)")
    path = Path(match["file"]).resolve() if match["file"] else Path(req.target_file)
    text = _read_text(path)
    if text is None:
        raise errors.UsageError(f"no such file: {match['file']}")
    line, code = int(match["line"]), match["code"]
    found = [d for d in check_source(text, str(path), load_config(path.parent)) if d.code == code]
    here = [d for d in found if d.line <= line <= d.end_line]
    if not here:
        elsewhere = f" ({code} is at line {', '.join(str(d.line) for d in found)})" if found else ""
        raise errors.UsageError(f"no {code} at {path.name}:{line}{elsewhere}")
    fixes = [(d, fix) for d in here for fix in code_fixes(d, text)]
    if not fixes:
        raise errors.UsageError(f"{code} at {path.name}:{line} has no quick fix that changes the code (it has one only "
                                "where the fix is sure to keep what the program computes)")
    diag, fix = fixes[0]
    rel = relpath(path, req.root)
    change = Change.of_edits(fix.title, {"kind": "fix", "code": code, "file": rel, "line": diag.line}, rel, text,
                             fix.edits)
    return [Tried(f"{code}-fix", change)], {"kind": "fix", "code": code, "file": str(path), "line": diag.line}


def patch_changes(req, patch: Path) -> tuple[list[Tried], dict]:
    from ..trying.change import Change

    try:
        text = patch.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise errors.UsageError(f"no such file: {patch}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise errors.UsageError(f"cannot read the patch {patch}: {e}") from None
    root = Path(req.root)
    change = Change.of_patch(f"the patch {patch.name}", {"kind": "patch", "file": str(patch.resolve())}, text,
                             lambda rel: _read_text(root / rel))
    return [Tried("patch", change)], {"kind": "patch", "file": str(patch.resolve())}


# -- measuring -----------------------------------------------------------------------------------------
def _candidate_request(req, change, copy):
    """`req` as it runs in the scratch copy holding `change`: its step loop where the change put it."""
    from ..source import loops
    from ..source.linemap import LineMap, header_text, map_step_loop
    from ..workspace import relpath

    target = copy.map_path(req.target_file)
    rel = relpath(req.target_file, req.root)
    changed = next((f for f in change.files if f.path == rel), None)
    line, header = req.target_line, req.step_header
    if changed is not None and req.target_function is None and line is not None:
        moved = LineMap.between(changed.before or "", changed.after).now(line - 1)
        if moved is not None and (found := loops.loop_at(changed.after, moved + 1)) is not None \
                and found.line == moved + 1:
            line = moved + 1
        else:  # the change rewrote the loop's header: the loop whose body is the same
            line = map_step_loop(changed.after, changed.before or "", line)
            if line is None:
                raise errors.StepscopeError(f"{change.title}: the changed code has no step loop where "
                                            f"{req.target_file.name}:{req.target_line} was", errors.NO_STEP)
        header = header_text(changed.after, line)
    elif changed is not None and req.target_function is not None:
        from ..capture.step import resolve_function

        line = resolve_function(target, req.target_function).line  # its def line, wherever the change put it
    return dataclasses.replace(
        req, root=copy.path, target_file=target, target_line=line, step_header=header,
        entry_script=copy.map_path(req.entry_script) if req.entry_script else None,
        cwd=copy.map_path(Path(req.cwd or req.root)),
        note=f"{req.note + '; ' if req.note else ''}the try of {change.title}")


def check_unchanged(root: Path, change) -> None:
    """A StepscopeError (refused) when a file of `change` is no longer what was tried."""
    for f in change.files:
        path = Path(root) / f.path
        text = _read_text(path)
        if f.before is None:
            if text is not None:
                raise errors.StepscopeError(f"{f.path} exists now, and the try created it: not applied", errors.REFUSED)
        elif text is None:
            raise errors.StepscopeError(f"{f.path} is gone since the try: not applied", errors.REFUSED)
        elif text != f.before:
            raise errors.StepscopeError(f"{f.path} changed since the try: not applied (try again on the file as it is "
                                        "now)", errors.REFUSED)


def try_changes(req, changes: Sequence[Tried], measure_run, *, source: dict, output: Any = None, cancel: Any = None,
                on_event: Callable[[int, int, Any], None] | None = None, notes: Any = None) -> dict:
    """Measure the step of the workspace as it is and of each change, in processes that take turns,
    and return the try document. The one pipeline of `stepscope try` and of the editor's Try this fix.
    Each change runs in a scratch copy of the workspace, removed whatever happens; the user's files
    are not written. `on_event(side, process, event)` gets each process's events (side 0: the
    baseline). A cancel raises capture.runner.Cancelled, a failed process measure.MeasureFailed."""
    import contextlib

    from .. import jsonio, workspace
    from ..agent.protocol import TRY
    from ..capture.runner import prepare_run
    from ..capture.scratch import ScratchCopy
    from ..measurement.compare import compare_sides, rotated_order
    from ..trying.result import try_document

    for tried in changes:
        check_unchanged(req.root, tried.change)
    stem = Path(req.target_file).stem
    baseline = measure.Side(req, prepare_run(req), "workspace as it is", req.root)
    sides = [baseline]
    with contextlib.ExitStack() as stack:
        for tried in changes:
            copy = stack.enter_context(ScratchCopy(
                req.root, {f.path: f.after for f in tried.change.files},
                real=[p for p in (req.target_file, req.entry_script) if p is not None],
                folders=[Path(req.cwd or req.root)]))
            candidate = _candidate_request(req, tried.change, copy)
            run = prepare_run(candidate, into=workspace.new_run(req.root, f"{stem}-try"))
            jsonio.write_json(run.file(TRY), {
                "version": 1, "name": tried.name, "source": source, "baseline": baseline.run.name,
                "change": tried.change.as_dict(), "tried_with": [t.name for t in changes]}, replace=False)
            sides.append(measure.Side(candidate, run, f"change {tried.name}", req.root))
        measure.run_sides(sides, rotated_order(len(sides), measure_run.runs), output=output, cancel=cancel,
                          notes=notes, on_side_event=on_event)
    base_doc = measure.finish_side(baseline, measure_run, notes=notes)
    tried_docs = []
    for tried, side in zip(changes, sides[1:]):
        doc = measure.finish_side(side, measure_run, notes=notes)
        comparison = compare_sides(measure.side_of(base_doc), measure.side_of(doc), paired=True,
                                   tolerance=measure_run.tolerance, force=True)
        doc = measure.with_comparison(doc, comparison, {"run": baseline.run.name, "label": "the workspace as it is",
                                                        "interleaved": True, "run_dir": base_doc["run_dir"]}, req.root)
        tried_docs.append((tried.name, tried.change, doc))
    options = {"warmup": req.measure.warmup, "passes": req.measure.passes, "runs": measure_run.runs,
               "seed": req.measure.seed, "tolerance": measure_run.tolerance, "value": req.measure.value}
    return try_document(source, base_doc, tried_docs, options)


# -- applying ------------------------------------------------------------------------------------------
def write_change(root: Path, change) -> list[str]:
    """Write `change` into the workspace, each file atomically (a temporary file beside it, then a
    rename, the file's mode kept), after checking that every file is still what was tried."""
    check_unchanged(root, change)
    staged: list[tuple[str, Path]] = []
    try:
        for f in change.files:
            path = Path(root) / f.path
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".stepscope-apply")
            staged.append((f.path, Path(tmp)))
            with os.fdopen(fd, "wb") as out:
                out.write(f.after.encode("utf-8", "surrogateescape"))
                out.flush()
                os.fsync(out.fileno())
            if path.exists():
                os.chmod(tmp, path.stat().st_mode & 0o7777)
        check_unchanged(root, change)  # nothing changed while the new texts were written
        for rel, tmp in staged:
            os.replace(tmp, Path(root) / rel)
        staged = []
    finally:
        for _, tmp in staged:
            tmp.unlink(missing_ok=True)
    return [f.path for f in change.files]


def refusal(entry: dict, accept_changed_results: bool) -> str | None:
    """Why a tried change is not applied (None: it may be)."""
    if not entry.get("applicable", True):
        return f"{entry['name']} is {entry['change'].get('why_not')}"
    if entry.get("results_changed") and not accept_changed_results:
        return (f"{entry['name']} changed the results (its values differ from the workspace's): --apply "
                "--accept-changed-results applies it anyway")
    return None


def _apply_best(root: Path, doc: dict, changes: Sequence[Tried], args) -> dict:
    from ..trying.result import entry_named

    entry = entry_named(doc, None)
    if entry is None or (not entry.get("improvement") and len(doc.get("tries") or []) > 1):
        return {"applied": False, "reason": "no change was faster with the same results: nothing applied"}
    why_not = refusal(entry, args.accept_changed_results)
    if why_not is None and entry.get("verdict") != "faster":
        why_not = f"{entry['name']} was not faster ({entry.get('verdict')}): not applied"
    if why_not is not None:
        return {"applied": False, "name": entry["name"], "reason": why_not}
    change = next(t.change for t in changes if t.name == entry["name"])
    files = write_change(root, change)
    return {"applied": True, "name": entry["name"], "files": files}


def recorded_change(run_dir: Path):
    """The change a try run measured (its try.json), and its measure document."""
    from .. import jsonio
    from ..agent.protocol import MEASURE, TRY
    from ..trying.change import Change

    try:
        record = jsonio.read_json(run_dir / TRY)
    except FileNotFoundError:
        raise errors.UsageError(f"run {run_dir.name} is not a try run (it has no {TRY})") from None
    except (OSError, ValueError) as e:
        raise errors.UsageError(f"run {run_dir.name}: its {TRY} cannot be read: {e}") from None
    try:
        measured = jsonio.read_json(run_dir / MEASURE)
    except (OSError, ValueError):
        measured = None
    return record, Change.from_dict(record["change"]), measured


def _apply_recorded(args) -> int:
    """`stepscope try TRY_RUN --apply`: the change that run measured, written into its workspace."""
    run_dir = run_folder(args.script)
    record, change, measured = recorded_change(run_dir)
    if not isinstance(measured, dict) or measured.get("verdict") is None:
        raise errors.StepscopeError(f"try run {run_dir.name} did not finish (no verdict): not applied", errors.REFUSED)
    entry = {"name": record.get("name"), "applicable": change.applicable, "change": {"why_not": change.why_not},
             "results_changed": measured.get("values_match") is False}
    why_not = refusal(entry, args.accept_changed_results)
    if why_not is not None:
        raise errors.StepscopeError(why_not, errors.REFUSED)
    root = Path((measured.get("baseline") or {}).get("run_dir") or run_dir).parent.parent.parent
    files = write_change(root, change)
    doc = {"applied": True, "run": run_dir.name, "name": record.get("name"), "files": files}
    if args.json:
        from ..jsonio import dumps

        sys.stdout.buffer.write(dumps(doc) + b"\n")
    else:
        sys.stdout.write(f"applied {record.get('name')} ({change.title}) to {', '.join(files)}\n")
    return errors.OK


# -- output --------------------------------------------------------------------------------------------
def _emit(doc: dict, args: argparse.Namespace) -> None:
    if args.json:
        from ..jsonio import dumps

        sys.stdout.buffer.write(dumps(doc) + b"\n")
        return
    from ..trying.present import try_text

    sys.stdout.write(try_text(doc))
    applied = doc.get("applied")
    if applied is not None:
        sys.stdout.write("\n" + (f"applied: {applied['name']} written to {', '.join(applied['files'])}\n"
                                 if applied.get("applied") else f"not applied: {applied['reason']}\n"))
    elif doc.get("best") is not None:
        best = next(e for e in doc["tries"] if e["name"] == doc["best"])
        if best.get("applicable"):
            sys.stdout.write(f"\napply it: stepscope try {best['run']} --apply\n")
