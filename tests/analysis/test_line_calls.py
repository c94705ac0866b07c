"""A line called many times a step: its median call beside its mean, and a flag where a few slow
calls carry its figure (analysis/line_calls.py), on durations and traces whose answers are known."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.analysis.line_calls import call_figures
from stepscope.analysis.present import line_hover
from stepscope.analysis.report import analyze

from .kineto_synth import Synth, run_folder


def test_a_line_called_once_a_step_gets_no_per_call_figures():
    assert call_figures([900.0, 1100.0, 1000.0], n_steps=3) == {}


def test_the_median_call_of_an_even_count_is_the_mean_of_the_middle_two():
    assert call_figures([10.0, 20.0, 30.0, 40.0], n_steps=2) == {"median_call_ms": 0.025, "few_calls": None}


def test_a_few_slow_calls_carrying_half_the_time_are_named():
    # 98 calls of 10 µs and 2 stalls of 600 µs: the 2 carry 1200 of 2180 µs
    figures = call_figures([10.0] * 98 + [600.0, 600.0], n_steps=2)
    assert figures["median_call_ms"] == 0.01
    assert figures["few_calls"] == {"calls": 2, "of": 100, "share": 0.55}


def test_time_spread_evenly_or_carried_by_many_calls_is_not_flagged():
    assert call_figures([10.0] * 100, n_steps=2)["few_calls"] is None
    # half the time in 10 of 100 calls: more than "a few" (5%)
    assert call_figures([10.0] * 90 + [90.0] * 10, n_steps=2)["few_calls"] is None
    # too few calls to speak of "a few of them"
    assert call_figures([10.0] * 9 + [500.0], n_steps=2)["few_calls"] is None


def _stalling_line() -> Synth:
    """Two 1 ms steps; ss:f0:9 is called 40 times a step for 5 µs, except one call a step of 400 µs."""
    s = Synth(devices=[])
    for k in range(2):
        t = k * 1000.0
        s.step(k + 1, t, 1000)
        at = t + 10
        for i in range(40):
            dur = 400.0 if i == 20 else 5.0
            s.region("ss:f0:9", at, dur)
            at += dur + 5
    return s


def test_the_report_and_the_hover_say_which_figure_a_few_calls_carry(tmp_path: Path):
    run = run_folder(tmp_path, _stalling_line(), files={"f0": "train.py"})
    report = analyze([run / "trace.json"])
    line = next(r for r in report["lines"] if r["line"] == 9)
    assert line["count"] == 40 and line["median_call_ms"] == pytest.approx(0.005)
    assert line["few_calls"] == {"calls": 2, "of": 80, "share": pytest.approx(800 / 1190, abs=1e-3)}
    note = next(n for n in report["notes"] if n.startswith("train.py:9:"))
    assert "2 of its 80 calls in the window (2 steps) carry 67% of its time" in note
    assert "median call 5 µs" in note
    hover = line_hover(line, report).replace("\\", "")  # Markdown escapes left out
    assert "per call: median 5 µs, mean 14.9 µs (40 calls per step)" in hover
    assert "2 of its 80 calls in the window carry 67% of its time" in hover
