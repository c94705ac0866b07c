"""The warm-up a `profiled-faster` finding advises uses up the batches prepared ahead at the pace the
window's steps really ran: a step nearly as slow as the loop's pace barely shrinks the workers'
queue, so "one more than the batches ready" is not always enough."""

from __future__ import annotations

import pytest

from stepscope.analysis.findings import Thresholds, find
from stepscope.analysis.findings.window import warmup_past_ready_batches


@pytest.mark.parametrize(("ahead", "window_ms", "pace_ms", "warmup", "advised"), [
    (8, 0.0, 50.0, 2, 9),     # an instant step takes a whole batch each: 8 steps, then the window
    (8, 1.0, 50.0, 2, 10),    # 0.98 of a batch per step: the 8 batches last 9 steps
    (4, 7.07, 27.18, 2, 7),   # the H200 DataLoader run: 0.74 per step, 6 steps (advising 5 was short)
    (8, 40.0, 50.0, 2, 41),   # 0.2 per step: 40 steps
    (8, 49.9, 50.0, 2, 81),   # barely faster: counted as 0.1 per step, never unbounded
    (None, 1.0, 50.0, 2, 3),  # nothing prepared ahead: one more than the warm-up that ran, at least 3
    (2, 1.0, 50.0, 12, 13),   # never less than the warm-up that already ran, plus one
])
def test_the_warmup_outlasts_the_ready_batches(ahead, window_ms, pace_ms, warmup, advised) -> None:
    assert warmup_past_ready_batches(ahead, window_ms, pace_ms, warmup) == advised


def test_the_finding_advises_it_and_says_it_in_its_next_check() -> None:
    # a window of 20 ms steps against a loop at 50: one worker keeps 8 batches ready
    report = {
        "ms_per_step": 20.0, "distortion": 0.4, "steps": [{"name": f"ProfilerStep#{i}", "ms": 20.0} for i in range(5)],
        "gpu": {"observed": False}, "machine": {}, "regions": [], "schedule": {"wait": 1, "warmup": 2, "active": 5},
        "unprofiled": {"ms_per_step": 50.0, "mean_ms": 50.0, "passes": 5, "batch_read_ms": 45.0},
        "evidence": {"step_mean_ms": 20.0, "batch_read": {"ms": 2.0, "signals": ["ss:f0:3:next"]}},
        "scenario": {"observed": {"data_source": {"prepared_ahead": 8, "num_workers": 1}},
                     "step": {"file": "fed.py", "line": 3}},
    }
    found = [f for f in find(report, Thresholds()) if f["kind"] == "profiled-faster"]
    assert len(found) == 1
    f = found[0]
    # 1 - 20/50 = 0.6 of a batch per step: 8 batches last 14 steps, the window begins at the 15th
    assert f["figures"]["advised_warmup"] == 15 and f["figures"]["cause"] == "batches prepared ahead"
    assert "`--warmup 15`" in f["next_check"]
