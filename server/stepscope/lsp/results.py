"""A run, shaped for the editor: the `stepscope.profile` command's result and a document's figures
(`stepscope/figures`), as docs/extension.md gives them.

Pure: a run (its report) in, plain dicts out. Every string a client paints (labels, the summary,
the status bar's text and tooltip, notes) comes from the presenter (analysis/present.py) or the run
registry's notes; the client only places them. Only lines of files inside the workspace root are
returned.
"""

from __future__ import annotations

from typing import Any

from ..analysis import present
from ..source.blocks import compound_ends
from .runs import Run, in_workspace

#: a line below this share of the mean step gets no inline label unless the client says otherwise
DEFAULT_MIN_SHARE = 0.01


def _line_entry(uri: str, line_number: int, line: dict[str, Any], report: dict[str, Any], min_share: float,
                includes: str | None = None) -> dict:
    label = present.line_label(line, report)
    return {
        "uri": uri,
        "line": line_number,
        "wallMs": line["wall_ms"],
        "gpuMs": line.get("gpu_ms"),
        "fraction": present.heat(line, report),
        "precision": line.get("precision", "exact"),
        "label": f"{label} · {includes}" if includes else label,
        "labelled": present.worth_a_label(line, report, min_share),
    }


def included_lines(run: Run, uri: str, placed: list[tuple[int, dict[str, Any]]]) -> dict[int, str]:
    """For each placed compound statement (a loop, a `with`, a `def` ...) whose block holds other
    timed lines: `includes lines 71–75` (the current numbers of those lines), so its label does not
    read as time of its own. Keyed by the statement's current line (0-based)."""
    text = run.measured_text(uri)
    ends = compound_ends(text) if text is not None else {}
    out = {}
    for now, line in placed:
        end = ends.get(int(line["line"]))
        if end is None:
            continue
        inside = [n for n, other in placed if int(line["line"]) < int(other["line"]) <= end]
        if inside:
            first, last = min(inside) + 1, max(inside) + 1
            out[now] = f"includes line {first}" if first == last else f"includes lines {first}–{last}"
    return out


def editor_lines(run: Run, shown: set[str] | None = None, min_share: float = DEFAULT_MIN_SHARE) -> list[dict[str, Any]]:
    """The run's lines in workspace files (those of `shown` documents only, when given), costliest
    first, on the lines they were measured on."""
    out = []
    for line in run.report.get("lines") or []:
        uri = in_workspace(line.get("file"), run.root)
        if uri is None or (shown is not None and uri not in shown):
            continue  # never point the editor at files outside the workspace
        out.append(_line_entry(uri, int(line["line"]) - 1, line, run.report, min_share))
    return out


def document_figures(run: Run, uri: str, placed: list[tuple[int, dict[str, Any]]], hidden: int,
                     notes: tuple[str, ...], stale: bool, min_share: float = DEFAULT_MIN_SHARE) -> dict[str, Any]:
    """`stepscope/figures`: a document's figures on its current lines (0-based), how many are hidden
    because their code changed, the notes that go with them (an earlier run than one that failed),
    and the run's status-bar words: the status item names the run whose figures the editor shows."""
    includes = included_lines(run, uri, placed)
    return {
        "uri": uri,
        "runId": run.run_id,
        "status": {"text": present.status_text(run.report), "tooltip": present.status_tooltip(run.report, run.run_id)},
        "lines": [_line_entry(uri, number, line, run.report, min_share, includes.get(number))
                  for number, line in placed],
        "hidden": hidden,
        "notes": list(notes),
        "stale": stale,
    }


def profile_result(run: Run, shown: set[str] | None = None, min_share: float = DEFAULT_MIN_SHARE) -> dict[str, Any]:
    report = run.report
    return {
        "runId": run.run_id,
        "runDir": str(run.run_dir),
        "msPerStep": report.get("ms_per_step"),
        "machine": present.machine_label(report.get("machine")),
        "summary": present.run_summary(report),
        "status": {"text": present.status_text(report), "tooltip": present.status_tooltip(report, run.run_id)},
        "lines": editor_lines(run, shown, min_share),
        "findings": report.get("findings", []),
    }
