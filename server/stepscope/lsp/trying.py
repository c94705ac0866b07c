"""Try this fix (measure it): the `stepscope.try` command, the code actions that offer it, a try's
change (`stepscope/tryChange`) and its Apply (`stepscope/applyTry`).

The try is `stepscope try`'s own pipeline (`commands.try_.try_changes`: a scratch copy per change,
the workspace as it is and each change measured in processes that take turns), in a worker thread
this coroutine waits on, so a cancel of the progress stops the program within a poll and removes
the scratch copies (measuring.in_worker). What is tried:
- `finding`: {runId, kind, file, line, variant?}: the variants of a run's finding (its report lists
  them), or the one named;
- `fix`: {code, line}: the quick fix of a static rule at a line of the document (`uri`);
- `text`: true: the document as the editor holds it against the file on disk (unsaved edits).

Apply returns the edit that turns the file as it was tried into the text that was measured, as a
WorkspaceEdit for the client to apply; it is refused, in one line, when the file (on disk, or the
open document's text) is no longer what was tried, when the change is an experiment, or when its
results changed and the client did not say `accept`.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from .. import errors, workspace
from ..agent import protocol
from . import measuring, profiling
from .profiling import ProfileFailed

if TYPE_CHECKING:
    from .server import StepscopeServer

log = logging.getLogger("stepscope.lsp")

TRY_COMMAND = "stepscope.try"
TRY_CHANGE_REQUEST = "stepscope/tryChange"  # {runId} → {runId, title, files: [{path, uri, before, after}], diff}
APPLY_REQUEST = "stepscope/applyTry"  # {runId, accept?} → {runId, edit: WorkspaceEdit (JSON), files}
ACTION_TITLE = "Try this fix (measure it)"


# -- code actions ----------------------------------------------------------------------------------------
def try_actions(ls: "StepscopeServer", uri: str, context: types.CodeActionContext | None, wanted: types.Range,
                command: str) -> list[types.CodeAction]:
    """"Try this fix (measure it)" for each variant of a run's finding among the diagnostics at the
    cursor, and for each static rule's quick fix that changes code in a loop of the document."""
    if context is None:
        return []
    actions = []
    placed = ls.runs.placed_findings(uri, ls.roots())
    for diagnostic in context.diagnostics:
        source = str(diagnostic.source or "")
        if source.startswith("stepscope run") and placed is not None:
            run, findings = placed
            for now, finding in findings:
                if finding.get("kind") != diagnostic.code or now != diagnostic.range.start.line:
                    continue
                for variant in finding.get("variants") or []:
                    arg = {"uri": uri, "position": {"line": now, "character": 0},
                           "finding": {"runId": run.run_id, "kind": finding["kind"], "file": finding.get("file"),
                                       "line": finding.get("line"), "variant": variant["name"]},
                           "title": variant["title"]}
                    actions.append(types.CodeAction(
                        title=f"{ACTION_TITLE}: {variant['title']}", kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        command=types.Command(title=ACTION_TITLE, command=command, arguments=[arg])))
                break
    actions += _fix_actions(ls, uri, context, command)
    return actions


def _fix_actions(ls: "StepscopeServer", uri: str, context: types.CodeActionContext,
                 command: str) -> list[types.CodeAction]:
    from ..source import loops
    from ..trying.variants import code_fixes

    codes = {str(d.code) for d in context.diagnostics if str(d.source or "") == "stepscope" and d.code}
    if not codes:
        return []
    text = ls.workspace.get_text_document(uri).source
    out = []
    for found in ls.documents.diagnostics_of(uri):
        if found.code not in codes or not any(d.code == found.code and d.range.start.line == found.line - 1
                                              for d in context.diagnostics):
            continue
        try:
            in_loop = loops.loop_at(text, found.line) is not None
        except loops.SourceSyntaxError:
            return []
        if not in_loop:
            continue
        for fix in code_fixes(found, text):
            arg = {"uri": uri, "position": {"line": found.line - 1, "character": found.col},
                   "fix": {"code": found.code, "line": found.line}, "title": fix.title}
            lsp = next(d for d in context.diagnostics if d.code == found.code and d.range.start.line == found.line - 1)
            out.append(types.CodeAction(
                title=f"{ACTION_TITLE}: {fix.title}", kind=types.CodeActionKind.QuickFix, diagnostics=[lsp],
                command=types.Command(title=ACTION_TITLE, command=command, arguments=[arg])))
            break
    return out


# -- the command -----------------------------------------------------------------------------------------
def _changes(ls: "StepscopeServer", args: dict[str, Any], measure, run_options):
    """(request, changes, source) of the command's arguments."""
    from ..commands import try_
    from ..trying.change import Change
    from ..workspace import relpath

    finding = args.get("finding")
    if isinstance(finding, dict):
        run_dir = ls.runs.folder_of(finding.get("runId"), ls.roots())
        where = f"@{finding['file']}:{finding['line']}" if finding.get("file") and finding.get("line") else ""
        variant = finding.get("variant")
        python = args.get("python") if isinstance(args.get("python"), str) else None
        return try_.finding_changes(run_dir.name, f"{finding.get('kind')}{where}",
                                    [variant] if isinstance(variant, str) else None, measure, run_options,
                                    python=python, run_dir=run_dir)
    program = profiling.step_program(ls, args, verb="trying")
    from ..capture.request import CaptureRequest
    from ..source.linemap import header_text

    step_text = Path(program["target_file"]).read_text(encoding="utf-8", errors="surrogateescape")
    header = header_text(step_text, program["target_line"]) if program["target_function"] is None else None
    req = CaptureRequest(**program, run=run_options, measure=measure, step_header=header,
                         env_defaults={"PYTHONHASHSEED": str(measure.seed)})
    fix = args.get("fix")
    if isinstance(fix, dict):
        path = profiling.path_of(str(args.get("uri")))
        return (req, *try_.fix_changes(req, f"{fix.get('code')}@{path}:{fix.get('line')}"))
    if args.get("text") is True:
        uri = str(args.get("uri"))
        path = profiling.path_of(uri)
        before = path.read_bytes().decode("utf-8", "surrogateescape")
        after = ls.workspace.get_text_document(uri).source
        rel = relpath(path, req.root)
        if before == after:
            raise ProfileFailed(f"{path.name} has no unsaved changes to try", errors.USAGE)
        change = Change.of_texts(f"your unsaved changes to {path.name}", {"kind": "text", "file": rel},
                                 [(rel, before, after)])
        return req, [try_.Tried("unsaved", change)], {"kind": "text", "file": str(path)}
    raise ProfileFailed("stepscope.try needs a finding, a fix or text: true", errors.USAGE)


def _runs(settings: dict[str, Any], measure_run) -> Any:
    """A try's processes a side: the setting where the user made one, else `measure --against`'s."""
    import dataclasses

    from ..commands.measure import AGAINST_RUNS

    return measure_run if "runs" in settings else dataclasses.replace(measure_run, runs=AGAINST_RUNS)


async def try_at(ls: "StepscopeServer", args: dict[str, Any]) -> dict[str, Any]:
    from ..commands.try_ import try_changes

    loop = asyncio.get_running_loop()
    progress = profiling._Progress(ls, args.get("workDoneToken"), loop)
    measure, run_options, measure_run, settings = measuring.measure_settings(ls, args)
    measure_run = _runs(settings, measure_run)
    try:
        req, changes, source = _changes(ls, args, measure, run_options)
    except errors.StepscopeError as e:
        raise ProfileFailed(str(e), e.exit_code) from None
    names = ", ".join(t.change.title for t in changes)
    progress.begin(f"Stepscope: trying {names}")
    log.info("trying %s at %s:%s with %s (%d passes, %d warm-up, %d process(es) a side)", names, req.target_file,
             req.target_line, req.python, req.measure.passes, req.measure.warmup, measure_run.runs)
    first_run = not (req.root / workspace.STATE_DIR / workspace.RUNS_DIR).exists()
    per_process = req.measure.warmup + req.measure.passes
    total = per_process * (1 + len(changes)) * measure_run.runs
    steps = {"seen": 0}

    def on_event(side: int, process: int, event: protocol.Event) -> None:
        if isinstance(event, protocol.StepEvent):
            steps["seen"] += 1
            what = "the code as it is" if side == 0 else changes[side - 1].name
            progress.report(f"{what}, process {process + 1}/{measure_run.runs}: pass {event.index + 1}/{per_process}",
                            min(99, int(100 * steps["seen"] / total)))

    progress.report("starting the program for the code as it is (imports, data, model)", 0)
    doc = await measuring.in_worker(ls, progress, lambda output, cancel: try_changes(
        req, changes, measure_run, source=source, output=output, cancel=cancel, on_event=on_event,
        notes=lambda text: log.warning("%s", text)))
    ls.runs.remember_root(req.root)
    result = try_result(doc)
    measuring.first_run_notice(ls, first_run, args)
    progress.end(result["summary"])
    return result


def try_result(doc: dict[str, Any]) -> dict[str, Any]:
    """The editor's result of a try: every string the client shows, and each change's run."""
    from ..measurement.present import verdict_words
    from ..trying.present import beside_baseline, editor_markdown, editor_summary, headline
    from ..commands.try_ import refusal

    tries = []
    for entry in doc.get("tries") or []:
        why_not = refusal(entry, accept_changed_results=True)
        tries.append({"name": entry["name"], "title": entry["title"], "runId": entry["run"],
                      "verdict": entry.get("verdict"), "verdictWords": verdict_words(entry),
                      "headline": headline(beside_baseline(entry, doc.get("baseline"))), "diff": entry["change"]["diff"],
                      "resultsChanged": bool(entry.get("results_changed")), "improvement": bool(entry.get("improvement")),
                      "applicable": why_not is None, "whyNot": why_not})
    best = doc.get("best")
    shown = next((t for t in tries if t["name"] == best), tries[0] if tries else None)
    return {"kind": "try", "runId": shown["runId"] if shown else None, "baselineRunId": doc["baseline"]["run"],
            "best": best, "summary": editor_summary(doc), "markdown": editor_markdown(doc), "tries": tries}


# -- the change, and Apply -------------------------------------------------------------------------------
def _recorded(ls: "StepscopeServer", run_id: Any):
    from ..commands.try_ import recorded_change

    run_dir = ls.runs.folder_of(run_id, ls.roots())
    record, change, measured = recorded_change(run_dir)
    root = run_dir.parent.parent.parent
    return run_dir, root, record, change, measured


def change_document(ls: "StepscopeServer", params: dict[str, Any]) -> dict[str, Any]:
    """`stepscope/tryChange` {runId}: the files a try changed, before and after, and its diff."""
    run_dir, root, record, change, _ = _recorded(ls, params.get("runId"))
    return {"runId": run_dir.name, "name": record.get("name"), "title": change.title, "diff": change.diff(),
            "files": [{"path": f.path, "uri": (root / f.path).as_uri(), "before": f.before, "after": f.after}
                      for f in change.files]}


def apply_edit(ls: "StepscopeServer", params: dict[str, Any]) -> dict[str, Any]:
    """`stepscope/applyTry` {runId, accept?}: the WorkspaceEdit that makes each file what was measured,
    when it is still what was tried (the open document's text, else the file on disk)."""
    from ..commands.try_ import check_unchanged, refusal
    from ..trying.change import line_edits

    run_dir, root, record, change, measured = _recorded(ls, params.get("runId"))
    if not isinstance(measured, dict) or measured.get("verdict") is None:
        raise errors.StepscopeError(f"try run {run_dir.name} did not finish (no verdict): not applied",
                                    errors.REFUSED)
    entry = {"name": record.get("name"), "applicable": change.applicable, "change": {"why_not": change.why_not},
             "results_changed": measured.get("values_match") is False}
    why_not = refusal(entry, accept_changed_results=params.get("accept") is True)
    if why_not is not None:
        raise errors.StepscopeError(why_not, errors.REFUSED)
    changes: list[dict[str, Any]] = []
    for f in change.files:
        uri = (root / f.path).as_uri()
        if ls.is_open(uri) and ls.workspace.get_text_document(uri).source != f.before:
            raise errors.StepscopeError(f"{f.path} changed since the try (in the editor): not applied (try again on "
                                        "the text as it is now)", errors.REFUSED)
        # documentChanges, not `changes` keyed by URI: a file the try created is created first
        if f.before is None:
            changes.append({"kind": "create", "uri": uri})
        changes.append({"textDocument": {"uri": uri, "version": None},
                        "edits": [{"range": {"start": {"line": e.line - 1, "character": e.col},
                                             "end": {"line": e.end_line - 1, "character": e.end_col}},
                                   "newText": e.new_text} for e in line_edits(f.before or "", f.after)]})
    check_unchanged(root, change)
    log.info("applying the change of try %s (%s)", run_dir.name, change.title)
    return {"runId": run_dir.name, "edit": {"documentChanges": changes}, "files": [f.path for f in change.files]}
