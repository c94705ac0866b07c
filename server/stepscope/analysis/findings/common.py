"""What every finding shares: its shape, its anchor, and how precise its line is.

Invariants: a finding is a dict with `kind, file, line, severity, observation, hypothesis,
next_check, figures`; `observation` carries the figures in words and names the machine they came
from; a hypothesis is a possible reading, never a conclusion; no finding claims a speed-up.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..present import machine_words  # noqa: F401  (the machine in a finding's words: present.py)
from ..present import share_basis, share_percent, short_path

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


def short_place(item: dict, root: str | None) -> str:
    """`train.py:63`: a line as a message names it — relative to the source root as every table names
    it (present.short_path), and by its file name alone outside the root: the finding's own location
    already holds the machine's absolute path, a sentence need not repeat it."""
    path = item.get("file")
    if not path:
        return "no line named"
    shown = short_path(path, root)
    if Path(shown).is_absolute():
        shown = Path(shown).name
    return f"{shown}:{item.get('line')}"


def where_words(item: dict, root: str | None) -> str:
    """` at train.py:63`, or nothing for an item without a line."""
    if item.get("file") and item.get("line"):
        return f" at {short_place(item, root)}"
    return ""


@dataclass(frozen=True)
class Basis:
    """What a finding's per-step figures and shares are of (present.py defines it for every surface):
    the mean active step, or, for a trace without step markers, the window (`per` "window")."""
    ms: float
    per: str  # "step" or "window"

    def words(self) -> str:
        """`the 2.63 ms mean step` / `the 473.83 ms window`."""
        return f"the {self.ms:.2f} ms mean step" if self.per == "step" else f"the {self.ms:.2f} ms window"

    def share(self, ms: float) -> str:
        """`24% of the 2.63 ms mean step`."""
        return f"{share_percent(ms / self.ms)} of {self.words()}"


def basis(report: dict, *, window: bool = False) -> Basis | None:
    """The mean step of the report; with `window`, for a report without steps, its window (for
    findings that need no steps: their figures are then per window, and they say so)."""
    ms = share_basis(report)
    if not isinstance(ms, (int, float)) or ms <= 0:
        return None
    if report.get("ms_per_step") is None:
        return Basis(float(ms), "window") if window else None
    return Basis(float(ms), "step")


def step_ms(report: dict) -> float | None:
    """The mean active step in ms (what shares are of); None for a report without steps."""
    found = basis(report)
    return found.ms if found else None


def placed(item: dict, fallback: Anchor, evidence: dict) -> tuple[Anchor, str]:
    """Where a finding goes (the item's own line, else the fallback) and what to say about its precision."""
    if item.get("file"):
        return (item["file"], item.get("line")), precision_words(item.get("precision"), evidence)
    if fallback[0]:
        return fallback, ""
    return (None, None), precision_words(None, evidence)


def real_gpu_idle(report: dict) -> tuple[float, float, float] | None:
    """(the step timed without the profiler, the GPU's work per step in the window, the GPU's idle
    time in the real step), or None where either is unknown. The step is the mean of the passes
    after the window (what the window's per-step figures, means too, compare with)."""
    unprofiled = report.get("unprofiled") or {}
    real = unprofiled.get("mean_ms") or unprofiled.get("ms_per_step")
    busy = (report.get("window") or {}).get("gpu_ms")
    if not isinstance(real, (int, float)) or real <= 0 or not isinstance(busy, (int, float)):
        return None
    return float(real), float(busy), max(0.0, float(real) - float(busy))
