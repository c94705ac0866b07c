"""Per-document work of the server: static diagnostics, quick fixes, code lenses, and what a document
shows of its run (findings, inlay hints, hovers).

Invariants:
- Static results are computed from the document text the server holds (never from disk), and a
  document's cached diagnostics are replaced whole on each change, so quick fixes always match what
  the user sees. A notebook cell (each one a document of its own) is read with its IPython syntax
  set aside, line for line (`checked_text`).
- A document's published diagnostics are its static ones plus the findings of the run it shows, on
  the lines their code is on now (runs.py decides which run, and where its lines went); a finding
  whose line changed is not published. Where a failed run's program raised in it is an error on that
  line, also for a file not open (the Problems view lists it), until the script's next good run.
- Inlay hints and hovers are the run's figures on the lines their code is on now; a line below the
  label threshold (`minShare`) gets no inlay hint, its hover still has the figures.
- A `[tool.stepscope]` problem is said once per server (a message and the log), never per keystroke.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from ..analysis import present
from ..source import loops
from . import diagnostics as lsp_diagnostics

if TYPE_CHECKING:
    from ..rules.incremental import DocumentChecker
    from ..rules.model import Diagnostic
    from .server import StepscopeServer

log = logging.getLogger("stepscope.lsp")


class Documents:
    """The open documents' static checks, owned by the server (`ls.documents`)."""

    def __init__(self) -> None:
        self._found: dict[str, list["Diagnostic"]] = {}  # uri → static diagnostics of its current text
        self._checkers: dict[str, "DocumentChecker"] = {}  # uri → incremental checker of the open document
        self._said: set[str] = set()  # configuration problems already shown to the user

    def _config(self, ls: "StepscopeServer", path: str):
        """The rules' configuration for `path`, read with the findings' thresholds through the one
        loader (`stepscope.settings`), never above the workspace folder holding the file; every
        problem in either half is said once."""
        from ..settings import settings_for

        settings = settings_for(path, _folder_holding(ls, Path(path)))
        for warning in settings.warnings:
            self._say_once(ls, warning)
        return settings.rules

    def _say_once(self, ls: "StepscopeServer", problem: str) -> None:
        if problem in self._said:
            return
        self._said.add(problem)
        log.warning("%s", problem)
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning,
                                                       message=f"Stepscope: {problem}"))

    def _check(self, ls: "StepscopeServer", uri: str, text: str, path: str) -> list["Diagnostic"]:
        """`check_source(text, path, config)`, answered from the block an edit touched when it can
        (see `stepscope.rules.incremental`)."""
        from ..rules.incremental import DocumentChecker

        config = self._config(ls, path)
        checker = self._checkers.get(uri)
        if checker is None or checker.path != path or checker.config != config:
            checker = self._checkers[uri] = DocumentChecker(path, config)
        try:
            return checker.check(text)
        except Exception:
            log.exception("static checks failed on %s", uri)
            self._checkers.pop(uri, None)
            return []

    def publish(self, ls: "StepscopeServer", uri: str, *, opened: bool = False) -> bool:
        """Check a document's current text and publish its diagnostics. Its run's figures follow the
        text (on open: the run its file showed last comes back). True when the lines its run's
        figures are on changed."""
        doc = ls.workspace.get_text_document(uri)
        if not doc.path.endswith((".py", ".pyi")) and doc.language_id not in ("python", None):
            return False
        self._found[uri] = self._check(ls, uri, checked_text(uri, doc.source), doc.path)
        if opened:
            moved = ls.runs.restore(uri, doc.source, ls.roots())
        else:
            moved = ls.runs.follow(uri, doc.source)
        self.send(ls, uri, doc.version)
        return moved

    def send(self, ls: "StepscopeServer", uri: str, version: int | None = None) -> None:
        diagnostics = [lsp_diagnostics.to_lsp(d) for d in self._found.get(uri, [])]
        placed = ls.runs.placed_findings(uri, ls.roots())
        if placed is not None:
            run, findings = placed
            stale = ls.runs.stale(run)
            lines = ls.workspace.get_text_document(uri).lines
            for line, finding in findings:
                text = lines[line] if 0 <= line < len(lines) else ""
                diagnostics.append(lsp_diagnostics.finding_to_lsp(finding, run, line, stale=stale, line_text=text))
        text = _text_of(ls, uri) if ls.runs.has_raised(uri) else None
        raised = ls.runs.raised_at(uri, text) if text is not None else None
        if raised is not None:
            line, mark = raised
            lines = text.splitlines()
            diagnostics.append(lsp_diagnostics.raised_to_lsp(mark, line, lines[line] if line < len(lines) else ""))
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=version, diagnostics=diagnostics))

    def forget(self, ls: "StepscopeServer", uri: str) -> None:
        self._found.pop(uri, None)
        self._checkers.pop(uri, None)
        ls.runs.forget(uri)

    def diagnostics_of(self, uri: str) -> list["Diagnostic"]:
        """The static diagnostics of the document's current text."""
        return list(self._found.get(uri, []))

    def code_actions(self, ls: "StepscopeServer", uri: str, wanted: types.Range) -> list[types.CodeAction]:
        text = checked_text(uri, ls.workspace.get_text_document(uri).source)
        return lsp_diagnostics.code_actions(uri, self._found.get(uri, []), wanted, text)


NOTEBOOK_CELL_SCHEME = "vscode-notebook-cell:"


def checked_text(uri: str, text: str) -> str:
    """The text the rules read: a notebook cell's with its IPython syntax set aside (`!pip
    install x`, `%time f()`, `%%bash` cells: `rules.notebooks`), line for line, so diagnostics
    and fixes land on the cell's own lines; any other document's as it is."""
    if not uri.startswith(NOTEBOOK_CELL_SCHEME):
        return text
    from ..rules.notebooks import cell_python

    return cell_python(text)


def step_lenses(ls: "StepscopeServer", uri: str, command: str, measure_command: str) -> list[types.CodeLens]:
    """"Profile this step" (`command`) and beside it "Measure this step" (`measure_command`), with the
    position they stand at: over each loop that is a step; over each step-like function (a
    `training_step`, a function that calls backward), and over each call that runs one in a framework
    (`trainer.fit(model)`, `Trainer(...).train()`), those two with the function's name as `--function`
    takes it (`LitModel.training_step`, `transformers.trainer:Trainer.training_step`)."""
    from ..source import candidates

    doc = ls.workspace.get_text_document(uri)
    try:
        tree = loops.parse(doc.source)
        functions = candidates.step_functions(tree)
        found = candidates.step_loops(tree, functions)
    except loops.SourceSyntaxError:
        return []  # half-typed code: keep the last lenses the client has
    places: list[tuple[int, int, str | None, str]] = []  # (line, col, function, what the lens names)
    places += [(loop.line, loop.col, None, "this step") for loop in found if loop.is_step]
    for function in functions:
        if function.defined_here:
            places.append((function.line, function.col, function.function, "this step"))
        short = (function.function or "").rpartition(":")[2]
        places += [(line, col, function.function, short) for line, col, _ in function.runs]
    lenses = []
    for line, col, function, what in sorted(places, key=lambda p: (p[0], p[1])):
        pos = types.Position(line=line - 1, character=col)
        arg: dict = {"uri": uri, "position": {"line": pos.line, "character": pos.character}}
        if function is not None:
            arg["function"] = function
        for title, name in ((f"Profile {what}", command), (f"Measure {what}", measure_command)):
            lenses.append(types.CodeLens(range=types.Range(start=pos, end=pos),
                                         command=types.Command(title=title, command=name, arguments=[dict(arg)])))
    return lenses


def figures(ls: "StepscopeServer", uri: str, min_share: float) -> dict:
    """`stepscope/figures`: what a document shows of its run, on its current lines (docs/extension.md)."""
    from . import results

    placed = ls.runs.placed_lines(uri, ls.roots())
    if placed is None:
        return {"uri": uri, "runId": None, "lines": [], "hidden": 0, "notes": []}
    run, lines, hidden = placed
    return results.document_figures(run, uri, lines, hidden, ls.runs.notes(uri, run), ls.runs.stale(run), min_share)


def timing_hints(ls: "StepscopeServer", uri: str, wanted: types.Range, min_share: float) -> list[types.InlayHint]:
    from . import results

    placed = ls.runs.placed_lines(uri, ls.roots())
    if placed is None:
        return []
    run, lines, _ = placed
    text_lines = ls.workspace.get_text_document(uri).lines
    includes = results.included_lines(run, uri, lines)
    hints = []
    for number, line in lines:
        if not (wanted.start.line <= number <= wanted.end.line) or number >= len(text_lines):
            continue
        if not present.worth_a_label(line, run.report, min_share):
            continue
        end = len(text_lines[number].rstrip("\r\n"))
        hints.append(types.InlayHint(
            position=types.Position(line=number, character=end),
            label=f"  {present.line_label(line, run.report)}"
                  + (f" · {includes[number]}" if number in includes else ""), padding_left=True,
        ))
    return hints


def timing_hover(ls: "StepscopeServer", uri: str, position: types.Position,
                 panel_command: str | None = None) -> types.Hover | None:
    """The figures of the line under the cursor, from the run the document shows (`panel_command`:
    the client's command that opens the trace panel on a line, when it has one)."""
    found = ls.runs.line_at(uri, position.line, ls.roots())
    if found is None:
        return None
    run, line = found
    lines = ls.workspace.get_text_document(uri).lines
    end = len(lines[position.line].rstrip("\r\n")) if position.line < len(lines) else 0
    link = None
    if panel_command:
        from . import panel

        link = panel.panel_link(panel_command, run, line.get("file"), line.get("line"))
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=present.line_hover(
            line, run.report, run.run_id, panel_link=link, notes=ls.runs.notes(uri, run))),
        range=types.Range(start=types.Position(line=position.line, character=0),
                          end=types.Position(line=position.line, character=end)),
    )


def _folder_holding(ls: "StepscopeServer", path: Path) -> Path | None:
    """The workspace folder `path` lies in (the innermost), or None for a file outside them all."""
    holding = [root for root in ls.roots() if path.is_relative_to(root)]
    return max(holding, key=lambda root: len(root.parts)) if holding else None


def _text_of(ls: "StepscopeServer", uri: str) -> str | None:
    """The document's text: the editor's when it is open, else the file's on disk (None: unreadable)."""
    try:
        return ls.workspace.get_text_document(uri).source
    except (OSError, UnicodeDecodeError):
        return None
