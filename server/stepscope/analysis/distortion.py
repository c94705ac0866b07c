"""The profiler's own cost: the step timed without it in the same process, and each line's share.

After the profiled window, the agent times further steps of the same loop without the profiler
(as many warm-up steps as preceded the window, then as many passes as the window had active
steps) and writes them as a timings record (`timings.json`, per rank `timings-rank<r>.json`:
`{"warmup_ms": [...], "raw_ms": [...], "clock": str}`, see measurement/result.py).

Invariants:
- `unprofiled` is None when no step was timed without the profiler (the loop ended first, or the
  run predates this record): never a made-up figure.
- `distortion` = profiled ms/step / unprofiled ms/step, both medians, both from the same process.
- Where the middle halves (p25–p75) of the window's steps and of the passes after it overlap
  (`window_overlap`), the ratio lies within the steps' own variation (steps that alternate
  between a wait for data and none): it is still the ratio, but it is not said as the profiler's
  cost, nor shared out among lines.
- `unprofiled.mean_ms` is the passes' total over their number (the loop's pace where step times
  alternate, as when DataLoader workers deliver batches in bursts); `unprofiled.batch_read_ms` the
  host time of the loop iterable's `next()` per pass (None for a loop without one), beside the
  window's own batch read (the report's evidence) — the evidence of the `profiled-faster` finding.
- A line's `profiler_ms_estimate` is an estimate, and named so: the measured difference
  (profiled − unprofiled ms/step, 0 when the profiled step was not slower) shared out in proportion
  to the events the profiler recorded for the line (its CPU operators and its kernels per step)
  over all events of the step. The profiler's cost is roughly per recorded event (an operator
  record, a kernel launch record), so lines of many small operators get most of it. Per-line
  figures are inclusive like `wall_ms` (a statement's estimate holds the lines of the functions
  it calls), so no line's estimate exceeds the measured difference; nor the line's own wall time
  (the profiler's cost on a line lies inside its wall), so its share of the line is at most 100%.
"""

from __future__ import annotations

from typing import Any

from ..measurement.stats import overlapping_middles, summarize

ESTIMATE_METHOD = ("estimate: the measured difference (profiled - unprofiled ms/step) shared out in proportion to "
                   "the events the profiler recorded per step (CPU operators and kernels) on each line")


def unprofiled_figures(timings: dict[str, Any] | None) -> dict[str, Any] | None:
    """The report's `unprofiled` object from a timings record; None without measured passes."""
    if not isinstance(timings, dict) or not timings.get("raw_ms"):
        return None
    try:
        summary = summarize(timings["raw_ms"])
    except ValueError:
        return None
    raw = list(timings["raw_ms"])
    reads = [r for r in (timings.get("batch_read_ms") or [])[: len(raw)] if isinstance(r, (int, float))]
    return {"ms_per_step": summary.median_ms, "passes": summary.passes, "iqr_ms": summary.iqr_ms,
            "mean_ms": round(sum(raw) / len(raw), 4),
            "batch_read_ms": round(sum(reads) / len(raw), 4) if reads else None,
            "raw_ms": raw, "warmup_ms": list(timings.get("warmup_ms") or []),
            "warmup_passes": len(timings.get("warmup_ms") or []), "noisy": summary.noisy,
            "clock": timings.get("clock"), "warmup_note": timings.get("warmup_note")}


def distortion(profiled_ms: float | None, unprofiled: dict[str, Any] | None) -> float | None:
    if not profiled_ms or not unprofiled or not unprofiled.get("ms_per_step"):
        return None
    return profiled_ms / unprofiled["ms_per_step"]


def window_overlap(steps_ms: list[float], unprofiled: dict[str, Any] | None
                   ) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """The middle halves (p25, p75) of the window's steps and of the passes timed after it, when they
    overlap (the two medians differ by less than the steps' own variation); None otherwise."""
    return overlapping_middles(steps_ms, (unprofiled or {}).get("raw_ms") or [])


def add_line_estimates(lines: list[dict[str, Any]], *, profiled_ms: float | None,
                       unprofiled: dict[str, Any] | None, events_per_step: float,
                       steps_ms: list[float] | None = None) -> None:
    """Set each line's `profiler_ms_estimate` (None where nothing can be estimated, and where the
    window's steps and the passes after it overlap: a difference within the steps' own variation is
    no cost to share out)."""
    difference = None
    if profiled_ms and unprofiled and unprofiled.get("ms_per_step") \
            and window_overlap(steps_ms or [], unprofiled) is None:
        difference = max(0.0, profiled_ms - unprofiled["ms_per_step"])
    for line in lines:
        events = (line.get("ops") or 0) + (line.get("kernels") or 0)
        if difference is None or events_per_step <= 0:
            line["profiler_ms_estimate"] = None
        else:
            estimate = difference * min(1.0, events / events_per_step)
            wall = line.get("wall_ms")
            line["profiler_ms_estimate"] = round(estimate if wall is None else min(estimate, wall), 4)
