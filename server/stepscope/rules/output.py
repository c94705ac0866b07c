"""Render check results as text, JSON or SARIF 2.1.0. Pure functions from results to a string.

Text: `path:line:col: CODE message` with a 1-based column (what editors and terminals expect);
for notebooks `path:cell N:line:col: ...`. JSON keeps the Diagnostic coordinates (1-based lines,
0-based columns). SARIF uses 1-based lines and columns counted in Unicode code points
(`columnKind: unicodeCodePoints`), as the SARIF specification defines them. For a notebook, the
SARIF region is relative to the code cell named in the result's `properties.notebookCell`, and no
fix is attached (a fix would have to address the cell inside the notebook's JSON).

The fixes rendered are the diagnostics' own: `check` gives JSON and SARIF the editor's
(`autofix.with_editor_fixes`).

Files that could not be checked (unreadable, undecodable, not parsing) are listed in JSON's
`errors` (with the line to blame when there is one) and in SARIF as error-level
`toolExecutionNotifications` of an invocation whose `executionSuccessful` is false. A notebook's
cell that does not parse is one such entry, with its `cell` (SARIF: `properties.notebookCell`) and
its line in that cell; its message says the other cells were checked.
"""

from __future__ import annotations

import json
from pathlib import Path

from .. import __version__
from .files import FileError
from .model import RULES, Diagnostic

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def render_text(diagnostics: list[Diagnostic], cwd: Path | None = None) -> str:
    out = []
    for d in diagnostics:
        shown = _display_path(d.path, cwd)
        where = f"{shown}:cell {d.cell}:{d.line}:{d.col + 1}" if d.cell else \
            f"{shown}:{d.line}:{d.col + 1}"
        out.append(f"{where}: {d.code} {d.message}")
    return "".join(line + "\n" for line in out)


def _display_path(path: str, cwd: Path | None) -> str:
    if cwd is None:
        return path
    try:
        return Path(path).relative_to(cwd).as_posix()
    except ValueError:
        return path


def render_json(diagnostics: list[Diagnostic], errors: list[FileError], files_checked: int,
                fixed: list[dict] | None = None) -> str:
    """`fixed` (with `--fix`): each finding fixed, as found, with the fix's `title`."""
    doc = {
        "version": __version__,
        "files_checked": files_checked,
        "diagnostics": [d.to_dict() for d in diagnostics],
        "errors": [{"path": e.path, "message": e.message, **({"line": e.line} if e.line else {}),
                    **({"cell": e.cell} if e.cell else {})} for e in errors],
    }
    if fixed is not None:
        doc["fixed"] = fixed
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"


def _level(severity: str) -> str:
    return "warning" if severity == "warning" else "note"


def render_sarif(diagnostics: list[Diagnostic], errors: list[FileError]) -> str:
    codes = sorted(RULES)
    index = {c: i for i, c in enumerate(codes)}
    rules = [{
        "id": code,
        "name": RULES[code].name,
        "shortDescription": {"text": RULES[code].summary},
        "helpUri": RULES[code].url,
        "defaultConfiguration": {"level": _level(RULES[code].severity),
                                 "enabled": RULES[code].default_on},
    } for code in codes]
    results = []
    for d in diagnostics:
        region = {"startLine": d.line, "startColumn": d.col + 1,
                  "endLine": d.end_line, "endColumn": d.end_col + 1}
        result: dict = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": _level(d.severity),
            "message": {"text": d.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": Path(d.path).resolve().as_uri()},
                "region": region,
            }}],
        }
        if d.cell is not None:
            result["properties"] = {"notebookCell": d.cell}
        fixes = [{
            "description": {"text": f.title},
            "artifactChanges": [{
                "artifactLocation": {"uri": Path(d.path).resolve().as_uri()},
                "replacements": [{
                    "deletedRegion": {"startLine": e.line, "startColumn": e.col + 1,
                                      "endLine": e.end_line, "endColumn": e.end_col + 1},
                    "insertedContent": {"text": e.new_text},
                } for e in f.edits],
            }],
        } for f in d.fixes if d.cell is None]
        if fixes:
            result["fixes"] = fixes
        results.append(result)
    run: dict = {
        "tool": {"driver": {
            "name": "stepscope",
            "version": __version__,
            "informationUri": "https://github.com/stepscope/stepscope",
            "rules": rules,
        }},
        "columnKind": "unicodeCodePoints",
        "results": results,
    }
    run["invocations"] = [{
        "executionSuccessful": not errors,
        "toolExecutionNotifications": [_notification(e) for e in errors],
    }]
    doc = {"version": "2.1.0", "$schema": SARIF_SCHEMA, "runs": [run]}
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"


def _notification(error: FileError) -> dict:
    location: dict = {"artifactLocation": {"uri": Path(error.path).resolve().as_uri()}}
    if error.line:
        location["region"] = {"startLine": error.line}
    where = f"{error.path}: cell {error.cell}" if error.cell else error.path
    notification: dict = {
        "level": "error",
        "message": {"text": f"{where}: {error.reason}"},
        "locations": [{"physicalLocation": location}],
        "descriptor": {"id": "could-not-check"},
    }
    if error.cell:
        notification["properties"] = {"notebookCell": error.cell}
    return notification
