"""A sample of timed passes summarised: pure functions over lists of milliseconds.

Invariants:
- Quantiles interpolate linearly between the two closest ranks (`statistics.quantiles(...,
  method="inclusive")`, numpy's default), so min = p0 ≤ p10 ≤ p25 ≤ median ≤ p75 ≤ p90 ≤ max = p100.
- Every summary is of the passes it is given, in milliseconds; nothing is dropped as an outlier
  (the raw values are reported beside it and a noisy sample is flagged, not cleaned).
- A sample is `noisy` when its IQR is more than NOISE_LIMIT of its median.
- Its median is not its pace when the mean (the total over the passes) is more than PACE_LIMIT
  away from it: skewed passes, or steps that alternate between a wait and none.
- Two samples whose middle halves (p25–p75) overlap (`overlapping_middles`) differ by less than
  their own variation: a ratio of their medians is not an effect.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

NOISE_LIMIT = 0.10  # IQR / median above this: the passes disagree too much for one figure to stand alone
PACE_LIMIT = 0.10  # |mean - median| / median above this: the median is not the loop's pace


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0 ≤ q ≤ 1) of `values`, interpolated linearly between closest ranks."""
    if not values:
        raise ValueError("quantile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q!r} is outside [0, 1]")
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    weight = position - below
    return ordered[below] + (ordered[above] - ordered[below]) * weight


def median(values: Sequence[float]) -> float:
    return quantile(values, 0.5)


def overlapping_middles(first: Sequence[float], second: Sequence[float]
                        ) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """The middle halves (p25, p75) of two samples when they overlap; None when they lie apart or a
    sample is empty."""
    if not first or not second:
        return None
    a = (quantile(first, 0.25), quantile(first, 0.75))
    b = (quantile(second, 0.25), quantile(second, 0.75))
    return (a, b) if a[0] <= b[1] and b[0] <= a[1] else None


@dataclass(frozen=True)
class Summary:
    """One sample of passes: how many, where its middle is and how wide it is (all in ms)."""

    passes: int
    median_ms: float
    iqr_ms: float
    p10_ms: float
    p90_ms: float
    min_ms: float
    max_ms: float

    @property
    def relative_iqr(self) -> float:
        return self.iqr_ms / self.median_ms if self.median_ms > 0 else math.inf

    @property
    def noisy(self) -> bool:
        return self.relative_iqr > NOISE_LIMIT

    def as_dict(self) -> dict[str, float | int | bool]:
        return {"passes": self.passes, "median_ms": self.median_ms, "iqr_ms": self.iqr_ms,
                "p10_ms": self.p10_ms, "p90_ms": self.p90_ms, "min_ms": self.min_ms, "max_ms": self.max_ms,
                "noisy": self.noisy}


def summarize(values_ms: Sequence[float]) -> Summary:
    """The summary of one sample; refuses an empty sample or a value that is not a finite
    duration ≥ 0 (a timer that went wrong must not turn into a figure)."""
    values = list(values_ms)
    if not values:
        raise ValueError("no passes to summarise")
    for v in values:
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
            raise ValueError(f"a pass time must be a finite number of ms >= 0 (got {v!r})")
    return Summary(
        passes=len(values),
        median_ms=quantile(values, 0.5),
        iqr_ms=quantile(values, 0.75) - quantile(values, 0.25),
        p10_ms=quantile(values, 0.10),
        p90_ms=quantile(values, 0.90),
        min_ms=min(values),
        max_ms=max(values),
    )


def samples_per_s(median_ms: float, batch_size: int | None) -> float | None:
    """Throughput at the median step: batch / median. None when the batch is not known."""
    if batch_size is None or batch_size <= 0 or median_ms <= 0:
        return None
    return batch_size * 1000.0 / median_ms


@dataclass(frozen=True)
class Variation:
    """How much repeated processes of one measurement disagree, beside how much passes of one
    process do. Both are relative to a median, in percent.

    `pass_to_pass_pct`: the median over processes of each process's IQR / median.
    `run_to_run_pct`: the range of the processes' medians (max - min) / their median; None with a
    single process (not observed, never 0).
    """

    run_medians_ms: tuple[float, ...]
    pass_to_pass_pct: float
    run_to_run_pct: float | None

    def as_dict(self) -> dict:
        return {"run_medians_ms": list(self.run_medians_ms), "pass_to_pass_pct": self.pass_to_pass_pct,
                "run_to_run_pct": self.run_to_run_pct}


def variation(runs_ms: Sequence[Sequence[float]]) -> Variation:
    """Pass-to-pass and run-to-run variation of one measurement made of several processes."""
    summaries = [summarize(run) for run in runs_ms]
    if not summaries:
        raise ValueError("no runs")
    medians = tuple(s.median_ms for s in summaries)
    pass_to_pass = median([100.0 * s.relative_iqr for s in summaries])
    run_to_run = None
    if len(medians) > 1:
        middle = median(medians)
        run_to_run = 100.0 * (max(medians) - min(medians)) / middle if middle > 0 else math.inf
    return Variation(medians, pass_to_pass, run_to_run)
