"""Interval arithmetic for elapsed time: union, length, difference.

Invariant: every function here returns figures that never count a moment twice — nested or
concurrent intervals are merged before they are measured (guide §5: never sum nested events).
Intervals are `(start, end)` pairs in microseconds with `end >= start`.
"""

from __future__ import annotations

from typing import Iterable

Interval = tuple[float, float]


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, disjoint intervals covering exactly the same moments as the input."""
    merged: list[Interval] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def length(merged: Iterable[Interval]) -> float:
    return sum(end - start for start, end in merged)


def union_length(intervals: Iterable[Interval]) -> float:
    """Elapsed time covered by any of the intervals."""
    return length(merge(intervals))


def clip(intervals: Iterable[Interval], lo: float, hi: float) -> list[Interval]:
    """The parts of the intervals inside [lo, hi]."""
    out = []
    for start, end in intervals:
        start, end = max(start, lo), min(end, hi)
        if end > start:
            out.append((start, end))
    return out
