"""Static-rule results as LSP diagnostics and code actions.

Rules speak 1-based lines and 0-based columns (`stepscope.rules.model`); LSP speaks 0-based
lines. The conversion lives here and nowhere else.
"""

from __future__ import annotations

from pathlib import Path

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


def finding_to_lsp(finding: dict, root: Path) -> tuple[str, types.Diagnostic] | None:
    """A finding of a run as an information diagnostic on its line (None when it has no line
    inside the workspace: those stay in the report and the panel)."""
    file, line = finding.get("file"), finding.get("line")
    if not file or not line:
        return None
    path = Path(file).resolve()
    root = Path(root).resolve()
    if path != root and root not in path.parents:
        return None
    message = f"{finding.get('observation', '')}\nNext check: {finding.get('next_check', '')}"
    return path.as_uri(), types.Diagnostic(
        range=_range(int(line), 0, int(line), 10_000),
        message=message.strip(),
        severity=(types.DiagnosticSeverity.Warning if finding.get("severity") == "warning"
                  else types.DiagnosticSeverity.Information),
        code=finding.get("kind"),
        source=SOURCE,
    )
