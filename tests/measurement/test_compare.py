"""Before/after verdicts: the ratio of medians, its interval over whole processes, the verdict.

The data here is simulated the way timings behave: each process has its own offset (run-to-run
variation: memory layout, clocks, other load), and its passes scatter much less around it.
"""

from __future__ import annotations

import math
import random

import pytest

from stepscope.measurement.compare import (FASTER, INCONCLUSIVE, MARGIN, NO_DIFFERENCE, SINGLE_PROCESS_MARGIN,
                                           SLOWER, WITHIN_MARGIN, check_values, compare, small_sample_widening,
                                           t975, verdict, verdict_detail)


def simulate(rng: random.Random, processes: int, passes: int, ms: float, *, run_to_run: float,
             pass_to_pass: float = 0.002, drift: list[float] | None = None) -> list[list[float]]:
    runs = []
    for r in range(processes):
        offset = rng.gauss(0.0, run_to_run) + (drift[r] if drift else 0.0)
        runs.append([ms * (1 + offset) * (1 + rng.gauss(0.0, pass_to_pass)) for _ in range(passes)])
    return runs


def test_the_ratio_is_of_the_medians_each_side_reports():
    a = [[10.0 + i / 10 for i in range(10)], [10.5 + i / 10 for i in range(9)] + [12.0]]
    b = [[20.0 + i / 10 for i in range(10)], [21.0 + i / 10 for i in range(10)]]
    c = compare(a, b)
    assert c.statistic == "median" and c.method["statistic"] == "median"
    assert c.ratio == pytest.approx(20.95 / 10.7)  # the pooled medians
    assert c.verdict == SLOWER
    assert c.ci95[0] <= c.ratio <= c.ci95[1]


def test_where_a_sides_median_is_not_its_pace_the_ratio_is_of_the_means():
    """A DataLoader with workers delivers in bursts: most steps find a batch ready, some wait for the
    next burst. The median halves while the loop runs no faster: the means say so."""
    baseline = [[60.0 + (i % 3) for i in range(14)]]
    bursts = [[15.0, 11.0, 33.0, 34.0, 150.0, 28.0, 38.0, 136.0, 15.0, 33.0, 149.0, 55.0, 163.0, 188.0]]
    c = compare(baseline, bursts)
    assert c.statistic == "mean" and c.method["statistic"] == "mean"
    mean = sum(bursts[0]) / len(bursts[0])
    assert c.ratio == pytest.approx(mean / (sum(baseline[0]) / 14)) and c.ratio > 1  # by the medians: 0.6
    assert c.verdict != FASTER
    # one slow pass among twenty moves the mean past 10% of the median too: the pace includes it
    a = [[10.0 + i / 10 for i in range(10)], [10.5 + i / 10 for i in range(9)] + [40.0]]
    assert compare(a, [[20.0] * 20]).statistic == "mean"


def test_same_data_same_interval_whatever_runs_before():
    rng = random.Random(7)
    a = simulate(rng, 3, 20, 10.0, run_to_run=0.01)
    b = simulate(rng, 3, 20, 10.3, run_to_run=0.01)
    first = compare(a, b, paired=True)
    random.seed(12345)  # the global generator is not the one used
    assert compare(a, b, paired=True) == first
    assert compare(a, b, paired=True, seed=1).ci95 != first.ci95  # the seed is what fixes it


def test_a_one_percent_difference_inside_run_to_run_noise_is_not_called():
    """Passes are tight (0.2%), processes move by 2%: passes alone would 'prove' a 1% slowdown."""
    rng = random.Random(11)
    a = simulate(rng, 3, 30, 10.0, run_to_run=0.02)
    b = simulate(rng, 3, 30, 10.1, run_to_run=0.02)
    honest = compare(a, b, paired=True)
    assert honest.verdict == NO_DIFFERENCE
    assert honest.ci95[0] < 1.0 < honest.ci95[1]
    # What treating every pass as independent would have said (the mistake this method avoids):
    naive = compare([[v] for r in a for v in r], [[v] for r in b for v in r])
    assert naive.ci95[1] - naive.ci95[0] < (honest.ci95[1] - honest.ci95[0]) / 4


def test_a_ten_percent_slowdown_is_called_with_three_interleaved_pairs():
    for seed in range(20):
        rng = random.Random(seed)
        a = simulate(rng, 3, 20, 10.0, run_to_run=0.005)
        b = simulate(rng, 3, 20, 11.0, run_to_run=0.005)
        c = compare(a, b, paired=True)
        assert c.verdict == SLOWER, (seed, c)
        assert c.ratio == pytest.approx(1.1, rel=0.03)
        assert compare(b, a, paired=True).verdict == FASTER


def test_no_change_is_almost_never_called_a_change():
    """The false-alarm rate on identical programs: 95% intervals and a 1% margin on top."""
    called = 0
    for seed in range(60):
        rng = random.Random(1000 + seed)
        a = simulate(rng, 3, 20, 10.0, run_to_run=0.005)
        b = simulate(rng, 3, 20, 10.0, run_to_run=0.005)
        called += compare(a, b, paired=True, resamples=500).verdict != NO_DIFFERENCE
    assert called <= 1


def test_pairs_cancel_the_drift_of_the_machine():
    """The machine slows down over the measurement (by up to 20%); each pair ran back to back."""
    rng = random.Random(5)
    drift = [0.0, 0.05, 0.1, 0.15, 0.2]
    a = simulate(rng, 5, 20, 10.0, run_to_run=0.002, drift=drift)
    b = simulate(rng, 5, 20, 10.5, run_to_run=0.002, drift=drift)
    assert compare(a, b, paired=True).verdict == SLOWER
    assert compare(a, b, paired=False).verdict == NO_DIFFERENCE  # drift dwarfs the 5% unpaired


def test_single_processes_are_compared_with_the_wider_margin_and_say_so():
    rng = random.Random(2)
    a = simulate(rng, 1, 50, 10.0, run_to_run=0.0)
    b3 = simulate(rng, 1, 50, 10.3, run_to_run=0.0)  # 3%: tight passes, but one process each
    b8 = simulate(rng, 1, 50, 10.8, run_to_run=0.0)
    c3, c8 = compare(a, b3), compare(a, b8)
    assert not c3.run_to_run_observed and c3.margin == SINGLE_PROCESS_MARGIN
    assert c3.ci95[0] > 1.01  # the passes alone would support it ...
    assert c3.verdict == NO_DIFFERENCE  # ... but a restart alone can move a median that much
    assert c8.verdict == SLOWER
    assert c8.as_dict()["method"]["run_to_run_observed"] is False


def test_the_small_sample_widening_follows_students_t():
    assert t975(1) == pytest.approx(12.706)
    assert t975(40) == pytest.approx(2.021, abs=1e-3)
    assert t975(120) == pytest.approx(1.980, abs=1e-3)
    assert small_sample_widening((1, 5), paired=False) == 1.0
    assert small_sample_widening((3, 3), paired=True) == pytest.approx(4.303 / 1.96 * math.sqrt(1.5), rel=1e-3)
    assert small_sample_widening((3, 3), paired=False) == pytest.approx(2.776 / 1.96 * math.sqrt(1.5), rel=1e-3)
    widening = [small_sample_widening((n, n), paired=True) for n in (3, 5, 30)]
    assert widening[0] > widening[1] > widening[2] > 1.0


def test_the_verdict_needs_the_whole_interval_beyond_the_margin():
    assert verdict((1.02, 1.2), MARGIN) == SLOWER
    assert verdict((1.005, 1.2), MARGIN) == NO_DIFFERENCE  # significant, but not beyond 1%
    assert verdict((0.8, 0.98), MARGIN) == FASTER
    assert verdict((0.8, 0.995), MARGIN) == NO_DIFFERENCE
    assert verdict((0.9, 1.1), MARGIN) == NO_DIFFERENCE


# Fixed data with 2 processes a side and an even number of passes, and the interval this method gives it
# (computed once, by hand-checked code, and kept): a change to the bootstrap's median, to the widening or
# to when run-to-run variation counts as observed moves these numbers or the verdict.
TWO_A = [[10.0, 10.4, 10.1, 10.3], [10.6, 10.2, 10.5, 10.7]]
TWO_B = [[9.6, 9.9, 9.7, 10.0], [9.8, 10.1, 9.5, 9.9]]
GOLDEN = {False: (0.8448688278022642, 1.0436792006501072), True: (0.6643001015515034, 1.2474153032966122)}


@pytest.mark.parametrize("paired", [False, True])
def test_golden_intervals_of_two_processes_a_side(paired: bool):
    c = compare(TWO_A, TWO_B, paired=paired)
    assert c.ratio == pytest.approx(9.85 / 10.35)  # the pooled medians: of 8 passes each, the mean of the middle two
    assert c.ci95 == pytest.approx(GOLDEN[paired], rel=1e-9)
    # widened on both sides alike: the same factor on the log scale below and above the estimate
    low, high = (math.log(v) for v in c.ci95)
    point = math.log(c.ratio)
    assert point - low > 0 and high - point > 0
    assert c.run_to_run_observed and c.margin == MARGIN  # two processes a side do observe run to run
    assert c.verdict == NO_DIFFERENCE and c.verdict_detail == INCONCLUSIVE


def test_two_processes_a_side_are_called_against_the_one_percent_margin():
    """A 3% speed-up measured tightly in 2 processes a side: run-to-run variation is observed (two
    processes differ), so the 1% margin applies and the verdict is `faster`; counted as unobserved, the
    5% margin would have hidden it."""
    a = [[10.0, 10.02, 10.01, 10.03], [10.05, 10.01, 10.04, 10.02]]
    b = [[9.70, 9.72, 9.69, 9.73], [9.71, 9.74, 9.70, 9.72]]
    c = compare(a, b)
    assert c.ci95 == pytest.approx((0.9604480285042083, 0.9756829839835462), rel=1e-9)
    assert c.run_to_run_observed and c.margin == MARGIN
    assert (c.verdict, c.verdict_detail) == (FASTER, FASTER)


def test_no_detectable_difference_is_split_into_ruled_out_and_inconclusive():
    assert verdict_detail((0.995, 1.008), MARGIN) == WITHIN_MARGIN  # a difference over 1% is ruled out
    assert verdict((0.995, 1.008), MARGIN) == NO_DIFFERENCE  # old readers keep their three values
    assert verdict_detail((1.005, 1.2), MARGIN) == INCONCLUSIVE
    assert verdict_detail((0.9, 1.1), MARGIN) == INCONCLUSIVE
    assert verdict_detail((1.02, 1.2), MARGIN) == SLOWER
    assert verdict_detail((0.97, 1.04), SINGLE_PROCESS_MARGIN) == WITHIN_MARGIN


def test_an_inconclusive_comparison_says_how_many_processes_would_likely_decide_it():
    """A 10% slowdown under 3% run-to-run noise, 3 interleaved pairs: mostly inconclusive. Measured
    again with the number of processes each comparison suggested, most are decided (the suggestion rests
    on the spread 3 processes showed, itself uncertain: most, not all)."""
    suggested, decided = 0, 0
    for seed in range(40):
        rng = random.Random(seed)
        c = compare(simulate(rng, 3, 10, 10.0, run_to_run=0.03), simulate(rng, 3, 10, 11.0, run_to_run=0.03),
                    paired=True, resamples=500)
        if c.verdict_detail != INCONCLUSIVE:
            assert c.processes_to_decide is None
            continue
        n = c.processes_to_decide
        assert n is not None and 3 < n <= 64, (seed, c)
        rng = random.Random(1000 + seed)
        again = compare(simulate(rng, n, 10, 10.0, run_to_run=0.03), simulate(rng, n, 10, 11.0, run_to_run=0.03),
                        paired=True, resamples=500)
        suggested += 1
        decided += again.verdict_detail != INCONCLUSIVE
    assert suggested >= 15 and decided >= 0.6 * suggested, (decided, suggested)
    # a ratio sitting on the margin is not decided by any number of processes worth suggesting
    on_edge = compare([[10.0, 10.1], [10.3, 10.2]], [[10.1, 10.2], [10.4, 10.3]])
    assert on_edge.verdict_detail == INCONCLUSIVE and on_edge.processes_to_decide is None
    # one process a side: no run-to-run variation to project from
    assert compare([[10.0, 10.2, 10.1]], [[10.6, 10.1, 10.9]]).processes_to_decide is None


@pytest.mark.parametrize("bad", [[], [[]], [[1.0, 0.0]], [[1.0, math.nan]]])
def test_sides_without_usable_passes_are_refused(bad):
    with pytest.raises(ValueError):
        compare(bad, [[1.0, 2.0]])


def test_paired_sides_need_as_many_processes():
    with pytest.raises(ValueError, match="paired"):
        compare([[1.0], [1.1]], [[1.0]], paired=True)


def test_values_match_within_the_tolerance_pass_by_pass():
    loss = [2.30, 2.25, 2.21, 2.18]
    assert check_values(loss, loss).match is True
    close = [v * (1 + 1e-6) for v in loss]
    assert check_values(loss, close, tolerance=1e-5).match is True
    changed = loss[:2] + [2.5, 2.4]
    result = check_values(loss, changed, tolerance=1e-5)
    assert result.match is False and result.first_difference == 2 and result.compared == 4
    assert result.max_relative_difference == pytest.approx((2.5 - 2.21) / 2.5)


def test_values_that_cannot_be_compared_are_unknown_not_a_match():
    assert check_values(None, [1.0]).match is None
    assert check_values([1.0, None], [1.0, 2.0]).match is None
    assert check_values([math.nan], [math.nan]).match is True  # the same result, however odd
    assert check_values([1.0], [math.nan]).match is False
    with pytest.raises(ValueError):
        check_values([1.0], [1.0], tolerance=-1)


def test_interleaved_processes_alternate_which_side_goes_first():
    from stepscope.measurement.compare import interleaved_order

    assert interleaved_order(3) == [("A", 0), ("B", 0), ("B", 1), ("A", 1), ("A", 2), ("B", 2)]
    order = interleaved_order(4)
    assert [side for side, _ in order[::2]].count("A") == 2  # each side first in half the pairs
