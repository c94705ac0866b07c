"""Static-rule results as LSP diagnostics and code actions.

Rules speak 1-based lines and 0-based columns (`stepscope.rules.model`); LSP speaks 0-based
lines. The conversion lives here and nowhere else.
"""

from __future__ import annotations

from lsprotocol import types

from ..rules.model import Diagnostic, Edit

SOURCE = "stepscope"


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


def code_actions(uri: str, found: list[Diagnostic], wanted: types.Range) -> list[types.CodeAction]:
    """Quick fixes for the diagnostics that touch `wanted` (0-based LSP range)."""
    actions = []
    for d in found:
        if d.end_line - 1 < wanted.start.line or d.line - 1 > wanted.end.line:
            continue
        for fix in d.fixes:
            actions.append(types.CodeAction(
                title=fix.title,
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[to_lsp(d)],
                edit=types.WorkspaceEdit(changes={uri: [_text_edit(e) for e in fix.edits]}),
            ))
    return actions
