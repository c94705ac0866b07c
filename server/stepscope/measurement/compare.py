"""Before/after: the ratio of two measurements' paces, its 95% interval, and the verdict.

`compare(baseline, candidate)` takes each side as a list of processes (runs), each a list of
pass times in ms, and returns `Comparison`: `ratio` = median(candidate) / median(baseline) over
all measured passes of each side (the `median_ms` each side reports), so a ratio below 1 is a
faster candidate. Where either side's median is not its pace (its mean more than PACE_LIMIT away:
steps that alternate between a wait and none, as DataLoader workers deliver in bursts), the ratio
and its interval are of the means instead (`statistic` "mean", each side's `mean_ms`): a median
of bursty passes can halve while the loop runs no faster.

The interval (docs/measure.md says why each step is there):
1. Two-stage bootstrap: draw processes with replacement, then each drawn process's passes with
   replacement, and take the ratio of the pooled medians; RESAMPLES times, from a fixed seed, so
   the same data always gives the same interval. Processes are the unit because passes of one
   process share its state (memory layout, clocks, the allocator, other load): pass-to-pass
   spread alone understates how much a restart can move a median.
2. Interleaved runs (`paired=True`: baseline and candidate processes alternated, pair i run back
   to back) are drawn as pairs, so drift of the machine over the measurement moves both sides of
   a pair together instead of widening (or, worse, faking) the difference.
3. With few processes the bootstrap is too narrow (it sees n clusters and treats them as the
   population), so the percentile interval (on the log scale) is widened around the estimate by
   t(0.975, n-1) / z(0.975) * sqrt(n / (n-1)): at n = 3 by 2.7x, at 5 by 1.6x, at 10 by 1.2x.
4. With one process on a side, run-to-run variation is not observed at all: the interval then
   holds pass-to-pass variation only, and says so (`run_to_run_observed` False).

The verdict calls a difference only when the whole interval lies beyond a margin: `slower` when
its low end is above 1 + margin, `faster` when its high end is below 1 / (1 + margin), otherwise
`no detectable difference`. The margin is MARGIN when run-to-run variation was observed, and
SINGLE_PROCESS_MARGIN when it was not (a restart alone can move a median by a few percent).

`no detectable difference` is two answers, which `verdict_detail` keeps apart (`verdict` keeps its
three values for readers that know only those):
- `within margin`: the whole interval lies within 1 / (1 + margin) .. 1 + margin, so a difference
  larger than the margin is ruled out;
- `inconclusive`: the interval reaches past the margin and also inside it, so the data neither call
  a difference nor rule one out. `processes_to_decide` then estimates how many processes a side
  would likely decide it: the interval's half-width on the log scale shrinks as sqrt(n) over the
  widening at n (processes are the unit), around the same ratio, and "likely" is the usual 80% power
  of a sample-size estimate (the interval clears the margin by z(0.8) / z(0.975) of its half-width
  more); None where that needs more than
  MAX_PROCESSES, or where a side has one process (no run-to-run variation to project from).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Sequence

from .stats import PACE_LIMIT, median, quantile

FASTER = "faster"
SLOWER = "slower"
NO_DIFFERENCE = "no detectable difference"
VERDICTS = (FASTER, SLOWER, NO_DIFFERENCE)
# what a `no detectable difference` is (verdict_detail): a larger difference ruled out, or nothing decided
WITHIN_MARGIN = "within margin"
INCONCLUSIVE = "inconclusive"
VERDICT_DETAILS = (FASTER, SLOWER, WITHIN_MARGIN, INCONCLUSIVE)
MAX_PROCESSES = 64  # beyond this many processes a side, "more processes" is no advice

MEDIAN, MEAN = "median", "mean"
MARGIN = 0.01  # a difference under 1% is not called, however tight the interval
SINGLE_PROCESS_MARGIN = 0.05  # ... nor one under 5% between single processes (run-to-run not observed)
RESAMPLES = 2000
SEED = 0
DEFAULT_TOLERANCE = 1e-4  # relative difference allowed between two runs' values (the loss)

_Z975 = 1.959963984540054
_Z80 = 0.8416212335729143  # the normal's 80% quantile: "likely" in processes_to_decide
# t(0.975, df) for df = 1..30; above that the Cornish-Fisher expansion is exact to 1e-4.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)


def t975(df: int) -> float:
    """The 97.5% quantile of Student's t with `df` degrees of freedom (df >= 1)."""
    if df < 1:
        raise ValueError("t quantile needs at least one degree of freedom")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)


def small_sample_widening(processes: tuple[int, int], paired: bool) -> float:
    """How much a bootstrap interval over (baseline, candidate) processes is widened: Student's t
    over the normal quantile (n - 1 degrees of freedom for n pairs, n_a + n_b - 2 for two
    independent sides), times the bootstrap's missing n / (n - 1) of variance (n: the smaller
    side). 1 when a side has a single process: there is no run-to-run variation to widen."""
    fewer = min(processes)
    if fewer < 2:
        return 1.0
    df = fewer - 1 if paired else sum(processes) - 2
    return t975(df) / _Z975 * math.sqrt(fewer / (fewer - 1))


@dataclass(frozen=True)
class Comparison:
    ratio: float  # candidate / baseline, of `statistic`
    ci95: tuple[float, float]
    verdict: str
    verdict_detail: str  # VERDICT_DETAILS: `verdict`, with `no detectable difference` split in two
    processes_to_decide: int | None  # inconclusive: processes a side that would likely decide it
    paired: bool  # processes drawn as interleaved pairs
    processes: tuple[int, int]  # (baseline, candidate)
    run_to_run_observed: bool
    margin: float
    widening: float
    resamples: int
    seed: int
    statistic: str = MEDIAN  # what the ratio is of: MEDIAN, or MEAN where a side's median is not its pace

    @property
    def method(self) -> dict:
        return {
            "resampling": "interleaved pairs of processes, then passes" if self.paired
            else "processes, then passes",
            "processes": list(self.processes),
            "run_to_run_observed": self.run_to_run_observed,
            "small_sample_widening": self.widening,
            "margin": self.margin,
            "resamples": self.resamples,
            "seed": self.seed,
            "statistic": self.statistic,
        }

    def as_dict(self) -> dict:
        return {"ratio": self.ratio, "ci95": list(self.ci95), "verdict": self.verdict,
                "verdict_detail": self.verdict_detail, "margin": self.margin,
                "processes_to_decide": self.processes_to_decide, "method": self.method}


def _check_side(name: str, runs: Sequence[Sequence[float]]) -> list[list[float]]:
    out = [list(r) for r in runs]
    if not out or any(not r for r in out):
        raise ValueError(f"the {name} has no measured passes")
    for r in out:
        for v in r:
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"the {name} holds a pass time that is not a positive number of ms: {v!r}")
    return out


def paced_by_mean(runs: Sequence[Sequence[float]]) -> bool:
    """Whether a side's median is not its pace: the mean of its pooled passes lies more than
    PACE_LIMIT away from their median."""
    pooled = [v for r in runs for v in r]
    middle = median(pooled)
    return abs(sum(pooled) / len(pooled) - middle) > PACE_LIMIT * middle


def compare(baseline: Sequence[Sequence[float]], candidate: Sequence[Sequence[float]], *,
            paired: bool = False, resamples: int = RESAMPLES, seed: int = SEED) -> Comparison:
    """The candidate against the baseline (see the module docstring for the method)."""
    a = _check_side("baseline", baseline)
    b = _check_side("candidate", candidate)
    if paired and len(a) != len(b):
        raise ValueError(f"paired sides need as many processes each (got {len(a)} and {len(b)})")
    if resamples < 100:
        raise ValueError("at least 100 resamples")
    statistic = MEAN if paced_by_mean(a) or paced_by_mean(b) else MEDIAN
    center = (lambda values: sum(values) / len(values)) if statistic == MEAN else median
    ratio = center([v for r in b for v in r]) / center([v for r in a for v in r])
    rng = random.Random(seed)
    choices, randrange = rng.choices, rng.randrange

    def draw(runs: list[list[float]], picks: list[int]) -> float:
        pool: list[float] = []
        for i in picks:
            pool.extend(choices(runs[i], k=len(runs[i])))
        if statistic == MEAN:
            return sum(pool) / len(pool)
        pool.sort()
        n = len(pool)
        return pool[n // 2] if n % 2 else 0.5 * (pool[n // 2 - 1] + pool[n // 2])

    logs = []
    for _ in range(resamples):
        picks_a = [randrange(len(a)) for _ in a]
        picks_b = picks_a if paired else [randrange(len(b)) for _ in b]
        logs.append(math.log(draw(b, picks_b) / draw(a, picks_a)))
    point = math.log(ratio)
    low, high = quantile(logs, 0.025), quantile(logs, 0.975)
    widening = small_sample_widening((len(a), len(b)), paired)
    low = point - widening * max(0.0, point - low)
    high = point + widening * max(0.0, high - point)
    observed = min(len(a), len(b)) >= 2
    margin = MARGIN if observed else SINGLE_PROCESS_MARGIN
    ci = (math.exp(low), math.exp(high))
    detail = verdict_detail(ci, margin)
    to_decide = None
    if detail == INCONCLUSIVE and observed:
        to_decide = processes_to_decide(point, max(point - low, high - point), (len(a), len(b)), paired, margin)
    return Comparison(ratio, ci, verdict(ci, margin), detail, to_decide, paired, (len(a), len(b)), observed, margin,
                      widening, resamples, seed, statistic)


def verdict(ci95: tuple[float, float], margin: float) -> str:
    """`slower` / `faster` only when the whole interval lies beyond the margin."""
    detail = verdict_detail(ci95, margin)
    return detail if detail in (FASTER, SLOWER) else NO_DIFFERENCE


def verdict_detail(ci95: tuple[float, float], margin: float) -> str:
    """`slower` / `faster` when the whole interval lies beyond the margin, `within margin` when it lies
    wholly within it (a larger difference is ruled out), else `inconclusive`."""
    low, high = ci95
    if low > 1.0 + margin:
        return SLOWER
    if high < 1.0 / (1.0 + margin):
        return FASTER
    if low >= 1.0 / (1.0 + margin) and high <= 1.0 + margin:
        return WITHIN_MARGIN
    return INCONCLUSIVE


def processes_to_decide(point: float, half_width: float, processes: tuple[int, int], paired: bool,
                        margin: float) -> int | None:
    """The fewest processes a side at which an interval of this ratio (`point`, its log) would likely
    lie wholly beyond or wholly within the margin: the half-width (log scale) projected as
    sqrt(n / n') times the widening at n' over the widening at n. None beyond MAX_PROCESSES (the
    ratio sits on the margin), or with a single process on a side."""
    n = min(processes)
    if n < 2 or half_width <= 0:
        return None
    edge = math.log1p(margin)
    base = half_width / small_sample_widening(processes, paired)
    for more in range(n + 1, MAX_PROCESSES + 1):
        # the interval's half-width at `more`, and the distance from the margin an estimate that moves by
        # its own noise still keeps with 80% probability (the usual power of a sample-size estimate)
        projected = base * small_sample_widening((more, more), paired) * math.sqrt(n / more)
        needed = projected * (1.0 + _Z80 / _Z975)
        if abs(point) - needed > edge or abs(point) + needed < edge:
            return more
    return None


@dataclass(frozen=True)
class ValuesCheck:
    """Whether two runs computed the same values (the loss, or `--value`) pass by pass."""

    match: bool | None  # None: not comparable (no values on a side, no pass in common)
    compared: int  # passes compared
    max_relative_difference: float | None
    first_difference: int | None  # index of the first pass beyond the tolerance
    tolerance: float

    def as_dict(self) -> dict:
        return {"match": self.match, "compared": self.compared,
                "max_relative_difference": self.max_relative_difference,
                "first_difference": self.first_difference, "tolerance": self.tolerance}


def _relative_difference(x: float, y: float) -> float:
    if x == y or (math.isnan(x) and math.isnan(y)):
        return 0.0
    if not (math.isfinite(x) and math.isfinite(y)):
        return math.inf
    return abs(x - y) / max(abs(x), abs(y))


def check_values(baseline: Sequence[float | None] | None, candidate: Sequence[float | None] | None,
                 tolerance: float = DEFAULT_TOLERANCE) -> ValuesCheck:
    """Compare the values of the passes both runs have, in order. A pass whose value was not a
    number on either side makes the check not comparable (None), never a match."""
    if not (isinstance(tolerance, (int, float)) and math.isfinite(tolerance) and tolerance >= 0):
        raise ValueError(f"the tolerance must be a number >= 0 (got {tolerance!r})")
    if not baseline or not candidate:
        return ValuesCheck(None, 0, None, None, tolerance)
    pairs = list(zip(baseline, candidate))
    if any(x is None or y is None for x, y in pairs):
        return ValuesCheck(None, len(pairs), None, None, tolerance)
    differences = [_relative_difference(float(x), float(y)) for x, y in pairs]
    beyond = [i for i, d in enumerate(differences) if d > tolerance]
    return ValuesCheck(not beyond, len(pairs), max(differences), beyond[0] if beyond else None, tolerance)


@dataclass(frozen=True)
class Side:
    """One side of a before/after comparison: a measurement's processes and what it measured."""

    run: str  # the run's id
    kind: str  # "measure" or "profile" (its passes timed without the profiler after the window)
    runs_ms: Sequence[Sequence[float]]  # measured passes, per process
    values: Sequence[float | None] | None  # the first process's values per pass, or None
    machine: dict
    scope: dict

    def summary(self) -> dict:
        pooled = [v for r in self.runs_ms for v in r]
        return {"run": self.run, "kind": self.kind, "median_ms": median(pooled) if pooled else None,
                "mean_ms": sum(pooled) / len(pooled) if pooled else None, "passes": len(pooled), "processes": len(self.runs_ms), "machine": self.machine}


class NotComparable(ValueError):
    """Two measurements that differ in what they measured (`differences`, in words)."""

    def __init__(self, differences: list[str]):
        super().__init__("; ".join(differences))
        self.differences = differences


def compare_sides(baseline: Side, candidate: Side, *, paired: bool = False, tolerance: float = DEFAULT_TOLERANCE,
                  force: bool = False) -> dict:
    """The comparison document of two measurements: ratio, ci95, verdict, method, values_match
    (and values_check), and, when `force` let differing measurements through, `differences`.
    Raises NotComparable when they differ and `force` is not set."""
    from .scope import differences as scope_differences

    found = scope_differences(baseline.machine, baseline.scope, candidate.machine, candidate.scope)
    if found and not force:
        raise NotComparable(found)
    result = compare(baseline.runs_ms, candidate.runs_ms, paired=paired)
    values = check_values(baseline.values, candidate.values, tolerance)
    if (baseline.scope.get("value") or "loss") != (candidate.scope.get("value") or "loss"):
        values = ValuesCheck(None, 0, None, None, tolerance)  # different expressions: nothing to compare
    doc = {"baseline": baseline.summary(), "candidate": candidate.summary(), **result.as_dict(),
           "values_match": values.match, "values_check": values.as_dict()}
    if found:
        doc["differences"] = found
    return doc


def interleaved_order(pairs: int) -> list[tuple[str, int]]:
    """The order in which `--against` runs its processes: pair i back to back, the side that goes
    first alternating between pairs (A B, B A, A B, ...), so that each side goes first equally
    often and a steady drift of the machine favours neither. ("A", i): the revision's process of
    pair i; ("B", i): the working tree's."""
    order: list[tuple[str, int]] = []
    for i in range(pairs):
        first, second = ("A", "B") if i % 2 == 0 else ("B", "A")
        order += [(first, i), (second, i)]
    return order


def rotated_order(sides: int, rounds: int) -> list[tuple[int, int]]:
    """The order in which `try` runs the processes of a baseline (side 0) and its candidates: round i
    runs every side once, back to back, starting one side later than round i - 1 (0 1 2, 1 2 0,
    2 0 1, ...), so that no side goes first more often than another and a steady drift of the
    machine favours none. (side, i): side's process of round i. Two sides: `interleaved_order`'s."""
    order: list[tuple[int, int]] = []
    for i in range(rounds):
        order += [((i + k) % sides, i) for k in range(sides)]
    return order
