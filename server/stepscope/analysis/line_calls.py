"""How a line's time is spread over its calls: the median call beside the mean, and whether a few
calls carry it.

A line called hundreds of times a step shows one figure per step, a mean; when a handful of those
calls stalled (a page fault, a lock, the allocator) that mean is not the line's usual cost. This
module reads the calls the window holds and says both.

Invariants:
- Only lines called more than once a step on average get figures (`MIN_CALLS_PER_STEP`): for a line
  called once a step, its calls are its steps, and the steps' spread is said elsewhere.
- `median_call_ms` is the median of the calls' durations, each clipped to the window (ms, exact
  for an odd count, the mean of the middle two for an even one).
- `few_calls` is said only where at least `MIN_CALLS` calls were seen and at most
  `FEW_CALLS_FRACTION` of them carry at least half of the line's summed call time: the slowest `calls`
  of `of` carry `share` of it. Pure function of the durations: no timing, no I/O.
"""

from __future__ import annotations

from pathlib import Path
from statistics import median
from typing import Any, Sequence

MIN_CALLS_PER_STEP = 2
MIN_CALLS = 20  # fewer calls than this and "a few of them" is most of them
FEW_CALLS_FRACTION = 0.05  # "a few": at most this share of the calls (at least one)
CARRIED = 0.5  # ... carrying at least this share of the time
US_PER_MS = 1000.0


def call_figures(durations_us: Sequence[float], n_steps: int) -> dict[str, Any]:
    """`{"median_call_ms": ..., "few_calls": {...} | None}` for a line whose calls in the window took
    `durations_us`, or `{}` where the line is not called more than once a step."""
    calls = len(durations_us)
    if n_steps <= 0 or calls < MIN_CALLS_PER_STEP * n_steps:
        return {}
    out: dict[str, Any] = {"median_call_ms": round(median(durations_us) / US_PER_MS, 4), "few_calls": None}
    total = float(sum(durations_us))
    if calls < MIN_CALLS or total <= 0:
        return out
    slowest = sorted(durations_us, reverse=True)
    most = max(1, int(calls * FEW_CALLS_FRACTION))
    carried = 0.0
    for k, d in enumerate(slowest[:most], 1):
        carried += d
        if carried >= CARRIED * total:
            out["few_calls"] = {"calls": k, "of": calls, "share": round(carried / total, 3)}
            break
    return out

def call_duration(ms: float) -> str:
    """One call's duration in words: `0.42 ms`, or `12.5 µs` below a tenth of a millisecond (a
    per-call figure is often a few microseconds, which milliseconds would round to zero)."""
    return f"{ms:.3g} ms" if ms >= 0.1 else f"{ms * US_PER_MS:.3g} µs"


NOTED_LINES = 3  # the report's notes name the busiest lines whose mean a few calls carry, no more


def few_calls_notes(lines: Sequence[dict[str, Any]], n_steps: int) -> list[str]:
    """The report's notes for the busiest lines (by wall time) whose mean a few calls carry."""
    carried = sorted((line for line in lines if line.get("few_calls")), key=lambda line: -line["wall_ms"])
    out = []
    for line in carried[:NOTED_LINES]:
        few = line["few_calls"]
        calls = few["of"]
        mean_ms = line["wall_ms"] * n_steps / calls if calls else 0.0
        out.append(
            f"{Path(line['file']).name}:{line['line']}: {few['calls']} of its {calls} calls in the window "
            f"({n_steps} step{'' if n_steps == 1 else 's'}) carry {round(100 * few['share'])}% of its time — its "
            f"{line['wall_ms']:.3f} ms/step is a few slow calls, not its usual cost (median call "
            f"{call_duration(line['median_call_ms'])}, mean {call_duration(mean_ms)}); time it again or look at "
            "those calls in the trace panel")
    return out
