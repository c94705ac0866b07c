"""Region labels written in the step's source that the trace does not hold (guide §9, first check).

`missing_labels(report) -> (missing, notes)` reads the source files the report points at and lists
each `record_function("...")` label written in the code that ran in the window but absent from the
window's regions.

Invariants:
- Only code that ran in the window is scanned: the step loop (or step function) of the scenario
  record, and each function holding a line of `report["lines"]`. For a line inside the step loop
  the scope is the loop, not the function around it, so labels of the set-up code are never listed.
- Only literal labels are compared (an f-string or a variable cannot be checked). NVTX ranges are
  not recorded by torch.profiler: they are counted in a note, never listed as missing.
- A file that cannot be read or parsed is skipped with a note; nothing here raises.
"""

from __future__ import annotations

import ast
from pathlib import Path

_RECORD = {"record_function"}
_NVTX = {"range_push", "range", "annotate", "mark", "range_start"}


def _call_name(func: ast.expr) -> tuple[str, str]:
    """(attribute or name, the object it is read from) of a call's function."""
    if isinstance(func, ast.Name):
        return func.id, ""
    if isinstance(func, ast.Attribute):
        owner = func.value
        owner_name = owner.attr if isinstance(owner, ast.Attribute) else owner.id if isinstance(owner, ast.Name) else ""
        return func.attr, owner_name
    return "", ""


def _labels(tree: ast.AST) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """Literal record_function labels and NVTX labels, with their lines."""
    records: list[tuple[str, int]] = []
    nvtx: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        first = node.args[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            continue
        name, owner = _call_name(node.func)
        if name in _RECORD:
            records.append((first.value, node.lineno))
        elif name in _NVTX and owner == "nvtx":
            nvtx.append((first.value, node.lineno))
    return records, nvtx


def _scopes(tree: ast.AST, step_line: int | None) -> tuple[list[ast.AST], ast.AST | None]:
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    step = None
    if step_line is not None:
        loops = [n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.AsyncFor, ast.While)) and n.lineno == step_line]
        defs = [n for n in functions if n.lineno == step_line]
        step = (loops or defs or [None])[0]
    return functions, step


def _inside(node: ast.AST, line: int) -> bool:
    return node.lineno <= line <= (getattr(node, "end_lineno", None) or node.lineno)


def missing_labels(report: dict) -> tuple[list[dict], list[str]]:
    present = {r.get("label") for r in report.get("regions") or []}
    step = (report.get("scenario") or {}).get("step") or {}
    step_file = step.get("file") if isinstance(step.get("file"), str) else None
    step_line = step.get("line") if isinstance(step.get("line"), int) else None
    lines_by_file: dict[str, set[int]] = {}
    for line in report.get("lines") or []:
        if isinstance(line.get("file"), str) and isinstance(line.get("line"), int):
            lines_by_file.setdefault(line["file"], set()).add(line["line"])
    if step_file:
        lines_by_file.setdefault(step_file, set())
    missing: list[dict] = []
    notes: list[str] = []
    nvtx_count = 0
    for path, ran in sorted(lines_by_file.items()):
        try:
            tree = ast.parse(Path(path).read_text(encoding="utf-8"), filename=path)
        except FileNotFoundError:
            notes.append(f"region labels not checked in {path}: the source is not there (use --source-root)")
            continue
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as e:
            notes.append(f"region labels not checked in {path}: {type(e).__name__}")
            continue
        functions, step_node = _scopes(tree, step_line if path == step_file else None)
        scopes: list[ast.AST] = [step_node] if step_node is not None else []
        for line in ran:
            if step_node is not None and _inside(step_node, line):
                continue
            around = [f for f in functions if _inside(f, line)]
            if around:
                scopes.append(min(around, key=lambda f: (getattr(f, "end_lineno", f.lineno) - f.lineno)))
        seen: set[tuple[str, int]] = set()
        for scope in scopes:
            records, nvtx = _labels(scope)
            nvtx_count += len(nvtx)
            for label, line in records:
                if label not in present and (label, line) not in seen:
                    seen.add((label, line))
                    missing.append({"label": label, "file": path, "line": line})
    if nvtx_count:
        notes.append(f"{nvtx_count} NVTX range label(s) in the step's source: torch.profiler does not record NVTX "
                     "ranges, so they are not checked against the trace")
    missing.sort(key=lambda m: (m["file"], m["line"]))
    return missing, notes
