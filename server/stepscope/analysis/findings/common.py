"""What every finding shares: its shape, its anchor, and how precise its line is.

Invariants: a finding is a dict with `kind, file, line, severity, observation, hypothesis,
next_check, figures`; `observation` carries the figures in words and names the machine they came
from; a hypothesis is a possible reading, never a conclusion; no finding claims a speed-up.
"""

from __future__ import annotations

from ..present import machine_words  # noqa: F401  (the machine in a finding's words: present.py)

Anchor = tuple[str | None, int | None]


def finding(kind: str, anchor: Anchor, observation: str, hypothesis: str, next_check: str, *,
            severity: str = "warning", figures: dict | None = None) -> dict:
    return {"kind": kind, "file": anchor[0], "line": anchor[1], "severity": severity,
            "observation": observation, "hypothesis": hypothesis, "next_check": next_check,
            "figures": figures or {}}


def loop_header(report: dict) -> Anchor:
    """The step loop's header line (the `ss:<file>:<line>:next` region), else the scenario's step line."""
    for region in report.get("regions") or []:
        if region.get("label", "").endswith(":next") and region.get("file"):
            return region["file"], region["line"]
    step = (report.get("scenario") or {}).get("step") or {}
    if isinstance(step.get("file"), str) and isinstance(step.get("line"), int):
        return step["file"], step["line"]
    return None, None


def precision_words(precision: str | None, evidence: dict) -> str:
    """Say how exact the line is, for traces Stepscope did not record."""
    if precision == "exact":
        return ""
    if precision == "function":
        return (" The line comes from Python stack frames (a line of the function's frame, not necessarily the "
                "statement): this trace was not recorded by Stepscope.")
    if precision == "call":
        return (" The line comes from the operators' call stacks (the statement that called them; Python time "
                "between its operators is not in the trace): this trace was not recorded by Stepscope.")
    if evidence.get("source") == "other" and evidence.get("call_stacks"):
        return (" No source line could be named: the trace's call stacks name no file found under the source "
                "root (pass --source-root, the folder the program ran from).")
    if evidence.get("source") == "other":
        return " No source line could be named: this trace was not recorded by Stepscope and has no Python stacks."
    return " No source line could be named for it."


def where_words(item: dict) -> str:
    if item.get("file") and item.get("line"):
        return f" at {item['file']}:{item['line']}"
    return ""


def step_ms(report: dict) -> float | None:
    """The step the shares are taken of: the headline ms/step (median of the active steps)."""
    value = report.get("ms_per_step")
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def placed(item: dict, fallback: Anchor, evidence: dict) -> tuple[Anchor, str]:
    """Where a finding goes (the item's own line, else the fallback) and what to say about its precision."""
    if item.get("file"):
        return (item["file"], item.get("line")), precision_words(item.get("precision"), evidence)
    if fallback[0]:
        return fallback, ""
    return (None, None), precision_words(None, evidence)
