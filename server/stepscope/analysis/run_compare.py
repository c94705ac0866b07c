"""Two profile runs statement by statement: each statement's wall time per step in both, matched by
its code, not by its line number.

    doc = compare_statements(RunLines("a-run", report_a, texts_a, root), RunLines("b-run", report_b, texts_b, root))
    doc["lines"]  # one entry per statement: {"a": side | None, "b": side | None, "text", "match", ...}

A side is `{"file": <absolute path>, "line": int, "wall_ms": float | None}`: where the statement is in
that run's code, and its figure there (None where that run measured nothing on it).

Invariants:
- Statements are matched as the editor places a run's figures on an edited document
  (source/linemap.py): through the text each run measured of the file (`texts`: the run folder's
  sources.json, else the file when unchanged since the run), a line maps only where both versions
  agree around it. A statement inserted, deleted or changed between the runs has no counterpart: it
  is listed on its own side only (the other side None), never set beside another statement.
- Where a run's text of a file is not known, that file's lines are matched by number, and the entry
  and `notes` say so (`match` "number"); where both are known, `match` is "code". An entry present on
  one side only has `match` None.
- Files are matched by their path relative to the workspace root; a line outside it keeps its absolute
  path.
- One entry per statement: a statement measured in both runs, in one, or in neither but present in
  the other's code (then its side is there with `wall_ms` None). `text` is the statement's first line
  as written (B's where it has one), without indentation; None where no text is known.
- Entries come costliest first (the larger of the two wall times).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..source.linemap import LineMap
from .present import machine_label, short_path

CODE, NUMBER = "code", "number"


@dataclass(frozen=True)
class RunLines:
    """One side: a profile run's id, its report, and the text it measured of each file it has figures
    for (workspace-relative path -> text, None where not known)."""

    run: str
    report: dict[str, Any]
    texts: dict[str, str | None] = field(default_factory=dict)
    root: str | None = None  # the workspace root the relative paths are of


def measured_files(report: dict[str, Any], root: Path | str) -> list[Path]:
    """The workspace files a report has figures or findings on (what a comparison needs the text of)."""
    root = Path(root).resolve()
    found = set()
    for item in [*(report.get("lines") or []), *(report.get("findings") or [])]:
        file = item.get("file")
        if isinstance(file, str) and file:
            path = Path(file)
            if path.is_absolute() and (root == path or root in path.parents):
                found.add(path)
    return sorted(found)


def _by_file(side: RunLines) -> dict[str, dict[int, dict[str, Any]]]:
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for line in side.report.get("lines") or []:
        if isinstance(line.get("line"), int) and isinstance(line.get("file"), str):
            out.setdefault(short_path(line["file"], side.root), {}).setdefault(line["line"], line)
    return out


def _text_lines(text: str | None) -> list[str] | None:
    return None if text is None else text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _statement(lines: list[str] | None, number: int) -> str | None:
    if lines is None or not 1 <= number <= len(lines):
        return None
    return lines[number - 1].strip() or None


def _absolute(rel: str, side: RunLines, measured: dict[int, dict[str, Any]]) -> str:
    """The absolute path of `rel` as this run names it (its lines' own, else under its root)."""
    if measured:
        return str(next(iter(measured.values()))["file"])
    if side.root and not Path(rel).is_absolute():
        return str(Path(side.root) / rel)
    return rel


def _side(file: str, number: int, measured: dict[int, dict[str, Any]]) -> dict[str, Any]:
    line = measured.get(number)
    return {"file": file, "line": number, "wall_ms": line.get("wall_ms") if line else None}


def _entry(a: dict | None, b: dict | None, text: str | None, match: str | None) -> dict[str, Any]:
    wa = a.get("wall_ms") if a else None
    wb = b.get("wall_ms") if b else None
    return {"a": a, "b": b, "text": text, "match": match,
            "change_ms": round(wb - wa, 4) if wa is not None and wb is not None else None,
            "ratio": round(wb / wa, 4) if wa and wb is not None else None}


def _file_entries(rel: str, a: RunLines, b: RunLines, in_a: dict[int, dict], in_b: dict[int, dict]) -> tuple[list[dict], bool]:
    """The entries of one file, and whether they were matched by code (both texts known)."""
    text_a, text_b = a.texts.get(rel), b.texts.get(rel)
    lines_a, lines_b = _text_lines(text_a), _text_lines(text_b)
    file_a, file_b = _absolute(rel, a, in_a), _absolute(rel, b, in_b)
    entries = []
    if text_a is None or text_b is None:  # what one run measured is not known: by number, said so
        for number in sorted(set(in_a) | set(in_b)):
            side_a = _side(file_a, number, in_a) if number in in_a else None
            side_b = _side(file_b, number, in_b) if number in in_b else None
            entries.append(_entry(side_a, side_b, _statement(lines_b, number) or _statement(lines_a, number), NUMBER))
        return entries, False
    moved = LineMap.between(text_a, text_b)
    seen_b: set[int] = set()
    for number in sorted(in_a):
        now = moved.now(number - 1)
        if now is None:  # its code changed or is gone: A's only
            entries.append(_entry(_side(file_a, number, in_a), None, _statement(lines_a, number), None))
            continue
        seen_b.add(now + 1)
        entries.append(_entry(_side(file_a, number, in_a), _side(file_b, now + 1, in_b), _statement(lines_b, now + 1),
                              CODE))
    for number in sorted(set(in_b) - seen_b):
        then = moved.then(number - 1)
        side_a = _side(file_a, then + 1, in_a) if then is not None else None
        entries.append(_entry(side_a, _side(file_b, number, in_b), _statement(lines_b, number),
                              CODE if side_a is not None else None))
    return entries, True


def compare_statements(a: RunLines, b: RunLines) -> dict[str, Any]:
    """The statement comparison of two profile runs (A the baseline, B the candidate): both runs'
    headline figures, `lines` (see the module's invariants) and `notes` for a reader."""
    by_a, by_b = _by_file(a), _by_file(b)
    entries: list[dict[str, Any]] = []
    by_number: list[str] = []
    for rel in sorted(set(by_a) | set(by_b)):
        found, by_code = _file_entries(rel, a, b, by_a.get(rel, {}), by_b.get(rel, {}))
        entries.extend(found)
        if not by_code:
            by_number.append(rel)
    entries.sort(key=lambda e: -max((e["a"] or {}).get("wall_ms") or 0.0, (e["b"] or {}).get("wall_ms") or 0.0))
    notes = []
    if by_number:
        notes.append(f"the code one run measured of {', '.join(by_number)} is not known (no sources.json in its "
                     "folder, and the file changed since): its lines are matched by number, which is wrong for any "
                     "line that moved")
    machines = machine_label(a.report.get("machine")), machine_label(b.report.get("machine"))
    if machines[0] != machines[1]:
        notes.append("the runs were measured on different machines: their figures do not compare")
    notes.append("two profiled runs are not a measurement: the profiler's own cost and the run-to-run noise are in "
                 "both; compare ms/step without the profiler (several timed passes) before deciding")
    return {"a": _summary(a), "b": _summary(b), "lines": entries, "notes": notes}


def _summary(side: RunLines) -> dict[str, Any]:
    report = side.report
    unprofiled = report.get("unprofiled") or {}
    return {"run": side.run, "root": side.root, "ms_per_step": report.get("ms_per_step"),
            "unprofiled_ms_per_step": unprofiled.get("ms_per_step"), "steps": len(report.get("steps") or []),
            "per": (report.get("window") or {}).get("per") or "step",
            "machine": machine_label(report.get("machine"))}
