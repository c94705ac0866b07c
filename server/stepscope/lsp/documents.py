"""Per-document work of the server: static diagnostics, quick fixes, code lenses, timing hints.

Invariant: results are computed from the document text the server holds (never from disk), and
a document's cached diagnostics are replaced whole on each change, so quick fixes always match
what the user sees.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from ..source import loops
from . import diagnostics as lsp_diagnostics

if TYPE_CHECKING:
    from ..rules.incremental import DocumentChecker
    from ..rules.model import Diagnostic
    from .server import StepscopeServer

log = logging.getLogger("stepscope.lsp")

_found: dict[str, list["Diagnostic"]] = {}
_checkers: dict[str, "DocumentChecker"] = {}  # uri → incremental checker of the open document
_run_findings: dict[str, list[types.Diagnostic]] = {}  # uri → findings of the last run, as diagnostics


def _check(uri: str, text: str, path: str) -> list["Diagnostic"]:
    """`check_source(text, path, config)`, answered from the block an edit touched when it can
    (see `stepscope.rules.incremental`)."""
    from ..rules.config import Config, load_config
    from ..rules.incremental import DocumentChecker

    try:
        config = load_config(Path(path).parent)
    except Exception as e:  # a broken pyproject.toml must not silence every check
        log.warning("ignoring [tool.stepscope] settings: %s", e)
        config = Config()
    checker = _checkers.get(uri)
    if checker is None or checker.path != path or checker.config != config:
        checker = _checkers[uri] = DocumentChecker(path, config)
    try:
        return checker.check(text)
    except Exception:
        log.exception("static checks failed on %s", uri)
        _checkers.pop(uri, None)
        return []


def publish(ls: "StepscopeServer", uri: str) -> None:
    doc = ls.workspace.get_text_document(uri)
    if not doc.path.endswith((".py", ".pyi")) and doc.language_id not in ("python", None):
        return
    found = _check(uri, doc.source, doc.path)
    if uri in _found and doc.version is not None and doc.version > 1:
        # Timings and findings no longer line up once the text changed.
        ls.last_runs.pop(uri, None)
        _run_findings.pop(uri, None)
    _found[uri] = found
    _send(ls, uri, doc.version)


def _send(ls: "StepscopeServer", uri: str, version: int | None = None) -> None:
    diagnostics = [lsp_diagnostics.to_lsp(d) for d in _found.get(uri, [])] + _run_findings.get(uri, [])
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
        uri=uri, version=version, diagnostics=diagnostics))


def show_findings(ls: "StepscopeServer", findings: list[dict], root: Path) -> None:
    """Replace the findings shown from the last run with those of a new one."""
    stale = set(_run_findings)
    _run_findings.clear()
    for finding in findings:
        diagnostic = lsp_diagnostics.finding_to_lsp(finding, root)
        if diagnostic is not None:
            uri, d = diagnostic
            _run_findings.setdefault(uri, []).append(d)
    for uri in stale | set(_run_findings):
        _send(ls, uri)


def forget(uri: str) -> None:
    _found.pop(uri, None)
    _checkers.pop(uri, None)


def code_actions(ls: "StepscopeServer", uri: str, wanted: types.Range) -> list[types.CodeAction]:
    return lsp_diagnostics.code_actions(uri, _found.get(uri, []), wanted)


def step_lenses(ls: "StepscopeServer", uri: str, command: str) -> list[types.CodeLens]:
    doc = ls.workspace.get_text_document(uri)
    try:
        found = loops.find_loops(doc.source)
    except loops.SourceSyntaxError:
        return []  # half-typed code: keep the last lenses the client has
    lenses = []
    for loop in found:
        if not loop.is_step:
            continue
        pos = types.Position(line=loop.line - 1, character=loop.col)
        arg = {"uri": uri, "position": {"line": pos.line, "character": pos.character}}
        lenses.append(types.CodeLens(
            range=types.Range(start=pos, end=pos),
            command=types.Command(title="Profile this step", command=command, arguments=[arg]),
        ))
    return lenses


def timing_hints(ls: "StepscopeServer", uri: str, wanted: types.Range) -> list[types.InlayHint]:
    run = ls.last_runs.get(uri)
    if not run:
        return []
    doc = ls.workspace.get_text_document(uri)
    lines = doc.lines
    hints = []
    for entry in run["lines"]:
        if entry["uri"] != uri or not (wanted.start.line <= entry["line"] <= wanted.end.line):
            continue
        if entry["line"] >= len(lines):
            continue
        end = len(lines[entry["line"]].rstrip("\r\n"))
        hints.append(types.InlayHint(
            position=types.Position(line=entry["line"], character=end),
            label=f"  {entry['label']}", padding_left=True,
        ))
    return hints
