"""Findings: from the report to an observation, a hypothesis and the next check (guide §9).

`find(report, thresholds=Thresholds()) -> list[dict]` is the single entry point; it is a pure
function of the report. Each finding has the contract's fields (`kind, file, line, observation,
hypothesis, next_check`); `observation` carries the figures, the hypothesis is a possible reading
(not a conclusion), and no finding ever claims a speed-up.

Kinds implemented here: `gpu-not-observed`, `unsteady-window`, `startup-cost`. Findings about the
loop as a whole are anchored on the loop header (the line of the `ss:<file>:<line>:next` region)
when the trace has one, else on no line.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median


@dataclass(frozen=True)
class Thresholds:
    #: fewer active steps than this cannot show a distribution
    min_active_steps: int = 3
    #: (slowest - fastest) / median step above this: the window is not steady
    max_step_spread: float = 0.5
    #: a start-up step this many times the steady ms/step is a start-up cost worth its own look
    startup_ratio: float = 2.0


def find(report: dict, thresholds: Thresholds = Thresholds()) -> list[dict]:
    anchor = _loop_header(report)
    out: list[dict] = []
    for rule in (_gpu_not_observed, _unsteady_window, _startup_cost):
        finding = rule(report, thresholds, anchor)
        if finding:
            out.append(finding)
    return out


def _finding(kind: str, anchor: tuple[str | None, int | None], observation: str, hypothesis: str,
             next_check: str) -> dict:
    return {"kind": kind, "file": anchor[0], "line": anchor[1], "observation": observation,
            "hypothesis": hypothesis, "next_check": next_check}


def _loop_header(report: dict) -> tuple[str | None, int | None]:
    for region in report.get("regions") or []:
        if region.get("label", "").endswith(":next") and region.get("file"):
            return region["file"], region["line"]
    return None, None


def _gpu_expected(report: dict) -> str | None:
    """Why GPU events were expected, or None when nothing says the program used a GPU."""
    machine = report.get("machine") or {}
    reason = (report.get("gpu") or {}).get("reason") or ""
    if "runtime calls" in reason:
        return "the trace holds device runtime calls"
    if machine.get("accelerator") in ("cuda", "rocm"):
        return f"the run's interpreter saw a {machine['accelerator'].upper()} device"
    devices = machine.get("trace_devices", machine.get("devices")) or []
    if devices:
        return f"the trace lists {devices[0]}"
    return None


def _gpu_not_observed(report: dict, t: Thresholds, anchor) -> dict | None:
    gpu = report.get("gpu") or {}
    if gpu.get("observed"):
        return None
    why = _gpu_expected(report)
    if why is None:
        return None
    return _finding(
        "gpu-not-observed", (None, None),
        f"No GPU events in the trace, although {why}. GPU time is unknown, not zero "
        f"({gpu.get('reason')}).",
        "GPU collection was unavailable or off (CUPTI/roctracer not loaded, no permission, or a CPU-only capture), "
        "so the per-line figures show only host time.",
        "Check that torch.profiler.supported_activities() includes ProfilerActivity.CUDA in this interpreter, "
        "then profile again with GPU collection on (without --cpu-only).",
    )


def _unsteady_window(report: dict, t: Thresholds, anchor) -> dict | None:
    values = [s["ms"] for s in report.get("steps") or []]
    if not values:
        return None
    if len(values) < t.min_active_steps:
        return _finding(
            "unsteady-window", anchor,
            f"Only {len(values)} active step(s) in the window ({', '.join(f'{v:.2f}' for v in values)} ms): "
            f"too few for a distribution.",
            "One or two steps can hold a one-off cost (a first call, an allocation, a new shape) that the "
            "steady state does not have.",
            f"Profile again with at least {max(5, t.min_active_steps)} active steps, then confirm with Measure "
            "(repeated passes without the profiler).",
        )
    mid = median(values)
    spread = (max(values) - min(values)) / mid if mid > 0 else 0.0
    if spread > t.max_step_spread:
        slowest = max(range(len(values)), key=values.__getitem__)
        return _finding(
            "unsteady-window", anchor,
            f"Step times range from {min(values):.2f} to {max(values):.2f} ms (median {mid:.2f} ms, spread "
            f"{spread:.0%}); the slowest is {report['steps'][slowest]['name']}.",
            "The window is not steady: warm-up may be too short, or the step takes different paths "
            "(new shapes, recompilation, a periodic action such as logging or checkpointing).",
            "Profile again with a longer warm-up and more active steps, and compare the slow step's events "
            "with a typical one; confirm with Measure.",
        )
    return None


def _startup_cost(report: dict, t: Thresholds, anchor) -> dict | None:
    startup = report.get("startup") or {}
    first = [v for v in startup.get("first_steps_ms") or [] if isinstance(v, (int, float))]
    steady = report.get("ms_per_step")
    if not first or not steady:
        return None
    worst = max(first)
    if worst < t.startup_ratio * steady:
        return None
    to_first = startup.get("to_first_step_ms")
    before = f"{to_first:.1f} ms from start to the first step; " if isinstance(to_first, (int, float)) else ""
    return _finding(
        "startup-cost", anchor,
        f"{before}the first steps took {', '.join(f'{v:.1f}' for v in first)} ms against {steady:.2f} ms/step in "
        f"the active window ({worst / steady:.1f}x). These are start-up figures, kept apart from the window.",
        "The first steps pay one-off costs (lazy initialisation, allocator growth, kernel selection or "
        "compilation) that the steady state does not.",
        "Decide whether the question is start-up or steady state; for start-up, time the first steps on their own "
        "across several fresh runs; for steady state, keep this warm-up or lengthen it.",
    )
