"""Interval arithmetic for elapsed time: union, length, difference.

Invariant: every function here returns figures that never count a moment twice — nested or
concurrent intervals are merged before they are measured (guide §5: never sum nested events).
Intervals are `(start, end)` pairs in microseconds with `end >= start`.
"""

from __future__ import annotations

import bisect
from typing import Iterable

Interval = tuple[float, float]


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, disjoint intervals covering exactly the same moments as the input."""
    ordered = iter(sorted(intervals))
    first = next(ordered, None)
    if first is None:
        return []
    merged: list[Interval] = []
    append = merged.append
    lo, hi = first  # the interval being grown
    for start, end in ordered:
        if start <= hi:
            if end > hi:
                hi = end
        else:
            append((lo, hi))
            lo, hi = start, end
    append((lo, hi))
    return merged


def length(merged: Iterable[Interval]) -> float:
    return sum([end - start for start, end in merged])  # summed in order, as sum() sums a list


def union_length(intervals: Iterable[Interval]) -> float:
    """Elapsed time covered by any of the intervals."""
    return length(merge(intervals))


def clip(intervals: Iterable[Interval], lo: float, hi: float) -> list[Interval]:
    """The parts of the intervals inside [lo, hi]."""
    out = []
    append = out.append
    for start, end in intervals:
        if lo > start:  # max(start, lo) and min(end, hi), as they choose between equal values
            start = lo
        if hi < end:
            end = hi
        if end > start:
            append((start, end))
    return out


def subtract(intervals: Iterable[Interval], holes: Iterable[Interval]) -> list[Interval]:
    """The moments of `intervals` that no interval of `holes` covers: sorted, disjoint."""
    out: list[Interval] = []
    cut = merge(holes)
    k = 0
    for start, end in merge(intervals):
        while k < len(cut) and cut[k][1] <= start:
            k += 1
        j = k
        at = start
        while j < len(cut) and cut[j][0] < end:
            if cut[j][0] > at:
                out.append((at, cut[j][0]))
            at = max(at, cut[j][1])
            j += 1
        if at < end:
            out.append((at, end))
    return out


class Coverage:
    """How much of any span a fixed set of intervals covers, in O(log n) per question (prefix sums
    over the merged intervals)."""

    def __init__(self, intervals: Iterable[Interval]):
        self.merged = merge(intervals)
        self.starts = [start for start, _ in self.merged]
        self.before = [0.0]  # time covered before the k-th interval starts
        for start, end in self.merged:
            self.before.append(self.before[-1] + end - start)

    def upto(self, t: float) -> float:
        """Time covered before the moment `t`."""
        k = bisect.bisect_right(self.starts, t)
        if k == 0:
            return 0.0
        start, end = self.merged[k - 1]
        return self.before[k - 1] + min(end, t) - start

    def upto_many(self, times: list[float]) -> list[float]:
        """`upto` of every moment of `times` (in any order), in one sweep."""
        out = [0.0] * len(times)
        starts, merged, before = self.starts, self.merged, self.before
        k, count = 0, len(merged)
        for i in sorted(range(len(times)), key=times.__getitem__):
            t = times[i]
            while k < count and starts[k] <= t:
                k += 1
            if k:
                start, end = merged[k - 1]
                out[i] = before[k - 1] + (end if end < t else t) - start
        return out

    def covered(self, lo: float, hi: float) -> float:
        """Time of [lo, hi] the intervals cover."""
        return max(0.0, self.upto(hi) - self.upto(lo)) if hi > lo else 0.0
