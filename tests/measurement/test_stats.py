"""The summary of one sample of passes, and the two kinds of variation of repeated processes."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from stepscope.measurement.stats import (NOISE_LIMIT, overlapping_middles, quantile, samples_per_s, summarize,
                                         variation)


def test_quantiles_are_the_inclusive_linear_interpolation():
    rng = random.Random(3)
    for n in (2, 3, 7, 10, 51):
        values = [rng.uniform(1, 100) for _ in range(n)]
        deciles = statistics.quantiles(values, n=10, method="inclusive")
        quartiles = statistics.quantiles(values, n=4, method="inclusive")
        assert quantile(values, 0.1) == pytest.approx(deciles[0])
        assert quantile(values, 0.9) == pytest.approx(deciles[-1])
        assert quantile(values, 0.25) == pytest.approx(quartiles[0])
        assert quantile(values, 0.5) == pytest.approx(statistics.median(values))
        assert quantile(values, 0.0) == min(values) and quantile(values, 1.0) == max(values)


def test_summary_of_known_passes():
    s = summarize([10.0, 12.0, 11.0, 13.0, 30.0])  # one slow pass stays in: nothing is dropped
    assert s.passes == 5
    assert s.median_ms == 12.0
    assert s.min_ms == 10.0 and s.max_ms == 30.0
    assert s.iqr_ms == pytest.approx(13.0 - 11.0)
    assert s.p10_ms == pytest.approx(10.4) and s.p90_ms == pytest.approx(23.2)
    assert s.min_ms <= s.p10_ms <= s.median_ms <= s.p90_ms <= s.max_ms
    assert s.noisy  # IQR 2 ms on a median of 12 ms: 16.7%


def test_the_noise_flag_is_iqr_over_median_above_ten_percent():
    quiet = summarize([100.0, 100.0, 105.0, 110.0, 110.0])  # IQR 10 / median 105 = 9.5%
    noisy = summarize([100.0, 100.0, 105.0, 112.0, 112.0])  # IQR 12 / median 105 = 11.4%
    assert quiet.relative_iqr < NOISE_LIMIT < noisy.relative_iqr
    assert not quiet.noisy and noisy.noisy
    assert quiet.as_dict()["noisy"] is False and noisy.as_dict()["noisy"] is True


@pytest.mark.parametrize("bad", [[], [1.0, math.nan], [1.0, -2.0], [math.inf], ["3"]])
def test_a_sample_that_is_not_durations_is_refused(bad):
    with pytest.raises(ValueError):
        summarize(bad)


def test_samples_per_second_needs_a_known_batch():
    assert samples_per_s(20.0, 64) == pytest.approx(3200.0)
    assert samples_per_s(20.0, None) is None
    assert samples_per_s(20.0, 0) is None


def test_variation_reports_run_to_run_beside_pass_to_pass():
    runs = [[10.0, 10.1, 10.2, 10.3, 10.4], [11.0, 11.1, 11.2, 11.3, 11.4], [10.5, 10.6, 10.7, 10.8, 10.9]]
    v = variation(runs)
    assert v.run_medians_ms == (10.2, 11.2, 10.7)
    assert v.run_to_run_pct == pytest.approx(100 * 1.0 / 10.7)  # medians 1 ms apart around 10.7
    assert v.pass_to_pass_pct == pytest.approx(100 * 0.2 / 10.7)  # each run's IQR is 0.2 ms
    assert v.run_to_run_pct > v.pass_to_pass_pct


def test_one_process_has_no_run_to_run_variation_rather_than_zero():
    v = variation([[5.0, 5.5, 6.0]])
    assert v.run_to_run_pct is None
    assert v.as_dict()["run_to_run_pct"] is None


def test_two_samples_overlap_when_their_middle_halves_do():
    # apart: each middle half (p25-p75) lies clear of the other, though the extremes mix
    assert overlapping_middles([1.0, 2.0, 3.0, 4.0, 9.0], [2.0, 5.0, 6.0, 7.0, 8.0]) is None
    # steps that alternate between a wait and none on both sides: the middles cover each other
    assert overlapping_middles([3.0, 40.0, 3.0, 42.0, 8.0], [3.0, 24.0, 44.0, 3.0, 41.0]) == ((3.0, 40.0), (3.0, 41.0))
    # touching counts as overlapping: the medians differ by no more than the spread
    assert overlapping_middles([1.0, 2.0, 3.0], [2.0, 3.0, 4.0]) == ((1.5, 2.5), (2.5, 3.5))
    assert overlapping_middles([1.0, 2.0, 3.0], [2.5, 3.0, 4.0]) is None  # (1.5, 2.5) and (2.75, 3.5)
    assert overlapping_middles([], [1.0]) is None and overlapping_middles([1.0], []) is None
