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
from .runs import Run, in_workspace

#: a line below this share of the mean step gets no inline label unless the client says otherwise
DEFAULT_MIN_SHARE = 0.01


def _line_entry(uri: str, line_number: int, line: dict[str, Any], report: dict[str, Any], min_share: float) -> dict:
    return {
        "uri": uri,
        "line": line_number,
        "wallMs": line["wall_ms"],
        "gpuMs": line.get("gpu_ms"),
        "fraction": present.heat(line, report),
        "precision": line.get("precision", "exact"),
        "label": present.line_label(line, report),
        "labelled": present.worth_a_label(line, report, min_share),
    }


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
    return {
        "uri": uri,
        "runId": run.run_id,
        "status": {"text": present.status_text(run.report), "tooltip": present.status_tooltip(run.report, run.run_id)},
        "lines": [_line_entry(uri, number, line, run.report, min_share) for number, line in placed],
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
