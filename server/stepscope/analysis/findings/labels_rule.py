"""The missing-label finding: labels written in the step's source but absent from the trace.

Invariants: it reads only `report["missing_labels"]` (built by `source_labels.missing_labels`) and the
window's region labels, one finding per label, on the line that writes it. Where torch wrote regions
of the window under the name "unknown" (it loses a label's name in some cases), a label absent by
name may be one of them: the finding says so, never that its code did not run.
"""

from __future__ import annotations

from .common import Anchor, finding
from .thresholds import Thresholds


#: the name torch gives a region whose label it lost
UNKNOWN = "unknown"


def missing_label(report: dict, t: Thresholds, anchor: Anchor) -> list[dict]:
    out = []
    regions = report.get("regions") or []
    steps = len(report.get("steps") or [])
    unnamed = any(r.get("label") == UNKNOWN for r in regions)
    for item in report.get("missing_labels") or []:
        if unnamed:
            hypothesis = ("The trace holds regions named 'unknown' in this window: torch wrote some labels without "
                          "their name, and this one may be among them — its code may have run. Or it did not run "
                          "during the window (a branch not taken, a function not called).")
            check = ("Look at the 'unknown' regions in the trace panel: if one lies where this code runs, it is this "
                     "label; otherwise check which path the window took, then profile again with the path you mean "
                     "to examine.")
        else:
            hypothesis = ("This code did not run during the window (a branch not taken, a function not called), or it "
                          "ran outside the profiled steps: figures you expected under that label are elsewhere or absent.")
            check = ("Check which path the window took (the condition around this line, the schedule's "
                     "wait/warmup/active), then profile again with the path you mean to examine.")
        out.append(finding(
            "missing-label", (item.get("file"), item.get("line")),
            f"The region label {item['label']!r} is written here but is not among the {len(regions)} region labels of "
            f"the trace's active window ({steps} active steps).",
            hypothesis, check,
            severity="info",
            figures={"label": item["label"]},
        ))
    return out
