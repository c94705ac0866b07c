"""Static-rule results as LSP diagnostics and code actions.

Rules speak 1-based lines and 0-based columns (`stepscope.rules.model`); LSP speaks 0-based
lines. The conversion lives here and nowhere else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ..analysis import present
from ..rules.model import Diagnostic, Edit

if TYPE_CHECKING:
    from .runs import RaisedMark, Run

SOURCE = "stepscope"
#: the source of a run's findings: the Problems view tells them from the static checks
RUN_SOURCE = "stepscope run"


def _range(line: int, col: int, end_line: int, end_col: int) -> types.Range:
    return types.Range(
        start=types.Position(line=max(0, line - 1), character=max(0, col)),
        end=types.Position(line=max(0, end_line - 1), character=max(0, end_col)),
    )


def to_lsp(d: Diagnostic) -> types.Diagnostic:
    return types.Diagnostic(
        range=_range(d.line, d.col, d.end_line, d.end_col),
        message=d.message,
        severity=types.DiagnosticSeverity.Warning if d.severity == "warning" else types.DiagnosticSeverity.Information,
        code=d.code,
        code_description=types.CodeDescription(href=d.url) if d.url else None,
        source=SOURCE,
    )


def _text_edit(e: Edit) -> types.TextEdit:
    return types.TextEdit(range=_range(e.line, e.col, e.end_line, e.end_col), new_text=e.new_text)


def code_actions(uri: str, found: list[Diagnostic], wanted: types.Range, text: str) -> list[types.CodeAction]:
    """Quick fixes for the diagnostics that touch `wanted` (0-based LSP range): the real fix first
    where one is safe (rules/quickfix.py, worked out now from `text`), then the rule's own fixes
    (`editor_fixes`)."""
    from ..rules.quickfix import editor_fixes

    actions = []
    for d in found:
        if d.end_line - 1 < wanted.start.line or d.line - 1 > wanted.end.line:
            continue
        for fix in editor_fixes(d, text):
            actions.append(types.CodeAction(
                title=fix.title,
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[to_lsp(d)],
                edit=types.WorkspaceEdit(changes={uri: [_text_edit(e) for e in fix.edits]}),
                is_preferred=not fix.title.startswith("Ignore ") or None,
            ))
    return actions


def finding_to_lsp(finding: dict, run: "Run", line: int, *, stale: bool = False,
                   line_text: str = "") -> types.Diagnostic:
    """A finding of a run as a diagnostic on `line` (0-based, where its code is now), worded by the
    presenter for the editor, its kind linked to its docs as rule codes are; it starts where the
    line's code does (`line_text`: the line now), not at its indentation. A finding from a run
    older than one that failed says so first, so it never passes for the latest run's."""
    message = present.finding_message(finding, run.report, str(run.root))
    if stale:
        message = f"(from run {run.run_id}: a later run failed) {message}"
    return types.Diagnostic(
        range=_range(line + 1, len(line_text) - len(line_text.lstrip()), line + 1, 10_000),
        message=message,
        severity=(types.DiagnosticSeverity.Warning if finding.get("severity") == "warning" and not stale
                  else types.DiagnosticSeverity.Information),
        code=finding.get("kind"),
        code_description=types.CodeDescription(href=present.finding_doc_url(str(finding.get("kind", "")))),
        source=RUN_SOURCE,
    )


def raised_to_lsp(mark: "RaisedMark", line: int, line_text: str = "") -> types.Diagnostic:
    """Where a failed run's program raised, as an error on `line` (0-based, where that code is now),
    from the start of its code to the end of the line; its message ends with the exception."""
    return types.Diagnostic(
        range=_range(line + 1, len(line_text) - len(line_text.lstrip()), line + 1, max(len(line_text), 1)),
        message=mark.message,
        severity=types.DiagnosticSeverity.Error,
        code="run-failed",
        source=RUN_SOURCE,
    )
