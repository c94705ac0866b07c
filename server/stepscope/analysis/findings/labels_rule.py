"""The missing-label finding: labels written in the step's source but absent from the trace.

Invariant: it reads only `report["missing_labels"]` (built by `source_labels.missing_labels`), one
finding per label, on the line that writes it.
"""

from __future__ import annotations

from .common import Anchor, finding
from .thresholds import Thresholds


def missing_label(report: dict, t: Thresholds, anchor: Anchor) -> list[dict]:
    out = []
    regions = len(report.get("regions") or [])
    steps = len(report.get("steps") or [])
    for item in report.get("missing_labels") or []:
        out.append(finding(
            "missing-label", (item.get("file"), item.get("line")),
            f"The region label {item['label']!r} is written here but is not among the {regions} region labels of "
            f"the trace's active window ({steps} active steps).",
            "This code did not run during the window (a branch not taken, a function not called), or it ran "
            "outside the profiled steps: figures you expected under that label are elsewhere or absent.",
            "Check which path the window took (the condition around this line, the schedule's wait/warmup/active), "
            "then profile again with the path you mean to examine.",
            severity="info",
            figures={"label": item["label"]},
        ))
    return out
