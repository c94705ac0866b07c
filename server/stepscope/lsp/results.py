"""A run, shaped for the editor: the `stepscope.profile` command's result (docs/extension.md).

Pure: a run (its report) in, plain dicts out. Every string a client paints (labels, the summary,
the status bar's text and tooltip) comes from the presenter (analysis/present.py); the client only
places them. Only lines of files inside the workspace root are returned.
"""

from __future__ import annotations

from typing import Any

from ..analysis import present
from .runs import Run, in_workspace


def editor_lines(run: Run, shown: set[str] | None = None) -> list[dict[str, Any]]:
    """The run's lines in workspace files (those of `shown` documents only, when given), costliest first."""
    out = []
    for line in run.report.get("lines") or []:
        uri = in_workspace(line.get("file"), run.root)
        if uri is None or (shown is not None and uri not in shown):
            continue  # never point the editor at files outside the workspace
        out.append({
            "uri": uri,
            "line": int(line["line"]) - 1,
            "wallMs": line["wall_ms"],
            "gpuMs": line.get("gpu_ms"),
            "fraction": present.heat(line, run.report),
            "precision": line.get("precision", "exact"),
            "label": present.line_label(line, run.report),
        })
    return out


def profile_result(run: Run, shown: set[str] | None = None) -> dict[str, Any]:
    report = run.report
    return {
        "runId": run.run_id,
        "runDir": str(run.run_dir),
        "msPerStep": report.get("ms_per_step"),
        "machine": present.machine_label(report.get("machine")),
        "summary": present.run_summary(report),
        "status": {"text": present.status_text(report), "tooltip": present.status_tooltip(report, run.run_id)},
        "lines": editor_lines(run, shown),
        "findings": report.get("findings", []),
    }
