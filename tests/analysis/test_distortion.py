"""The profiler's distortion: the unprofiled figures, the ratio, each line's estimated share."""

from __future__ import annotations

import pytest

from stepscope.analysis import present
from stepscope.analysis.distortion import add_line_estimates, distortion, unprofiled_figures, window_overlap
from stepscope.analysis.findings.distorted import mark_distorted, measure_command


def test_unprofiled_figures_are_the_median_and_iqr_of_the_timed_passes():
    u = unprofiled_figures({"warmup_ms": [30.0, 20.0], "raw_ms": [10.0, 12.0, 11.0, 13.0, 9.0], "clock": "host"})
    assert u["ms_per_step"] == 11.0 and u["passes"] == 5 and u["iqr_ms"] == pytest.approx(2.0)
    assert u["warmup_passes"] == 2 and u["raw_ms"][0] == 10.0
    assert distortion(22.0, u) == pytest.approx(2.0)


def test_nothing_timed_is_no_figure_not_zero():
    assert unprofiled_figures(None) is None
    assert unprofiled_figures({"raw_ms": []}) is None
    assert distortion(22.0, None) is None


def test_each_line_gets_a_share_of_the_difference_by_its_events():
    lines = [{"ops": 300, "kernels": 300}, {"ops": 10, "kernels": 0}, {"ops": None, "kernels": 0}]
    add_line_estimates(lines, profiled_ms=40.0, unprofiled={"ms_per_step": 18.0}, events_per_step=700)
    assert lines[0]["profiler_ms_estimate"] == pytest.approx(22.0 * 600 / 700, abs=1e-4)
    assert lines[1]["profiler_ms_estimate"] == pytest.approx(22.0 * 10 / 700, abs=1e-4)
    assert lines[2]["profiler_ms_estimate"] == 0.0
    assert all(line["profiler_ms_estimate"] <= 22.0 for line in lines)  # never more than measured


def test_no_estimate_without_an_unprofiled_figure_and_none_when_not_slower():
    lines = [{"ops": 5, "kernels": 5}]
    add_line_estimates(lines, profiled_ms=40.0, unprofiled=None, events_per_step=10)
    assert lines[0]["profiler_ms_estimate"] is None
    add_line_estimates(lines, profiled_ms=17.0, unprofiled={"ms_per_step": 18.0}, events_per_step=10)
    assert lines[0]["profiler_ms_estimate"] == 0.0



# A DataLoader step on the H200 after the advised warm-up: the window's steps and the passes after it
# both alternate between a wait for data and none (ms).
BURSTY_WINDOW = [7.96, 38.54, 3.24, 43.95, 2.89]
BURSTY_AFTER = [23.8, 44.1, 2.9, 41.7, 3.1]


def _bursty_report():
    unprofiled = unprofiled_figures({"raw_ms": BURSTY_AFTER, "warmup_ms": [5.0]})
    return {"ms_per_step": 7.96, "distortion": round(7.96 / 23.8, 4), "steps": [{"ms": v} for v in BURSTY_WINDOW],
            "window": {"mean_step_ms": sum(BURSTY_WINDOW) / 5}, "unprofiled": unprofiled,
            "scenario": {"step": {"file": "/ws/train.py", "line": 42}, "program": {"cwd": "/ws"}}}


def test_step_times_that_overlap_on_both_sides_are_not_called_the_profilers_cost():
    report = _bursty_report()
    assert window_overlap(BURSTY_WINDOW, report["unprofiled"]) == ((3.24, 38.54), (3.1, 41.7))
    text = present.distortion_text(report)
    assert text.startswith("without the profiler: 23.8 ms/step (median of 5 passes after the window")
    assert "overlap (middle half 3.24–38.5 ms in the window, 3.10–41.7 ms after it; means 19.3 and 23.1 ms)" in text
    assert "not the profiler's cost" in text and "faster than without" not in text
    found = mark_distorted([_finding("input-bound")], {**report, "ms_per_step": 30.0, "distortion": 30.0 / 23.8})[0]
    assert "made this step" not in found["observation"]  # 30 ms lies inside both middles: no cost to speak of
    assert "`stepscope measure train.py --line 42`" in found["next_check"]


def test_no_line_is_given_a_share_of_a_difference_within_the_steps_own_variation():
    lines = [{"ops": 5, "kernels": 5, "wall_ms": 30.0}]
    add_line_estimates(lines, profiled_ms=7.96, unprofiled=_bursty_report()["unprofiled"], events_per_step=10,
                       steps_ms=BURSTY_WINDOW)
    assert lines[0]["profiler_ms_estimate"] is None
    apart = unprofiled_figures({"raw_ms": [18.0, 18.2, 17.9, 18.1, 18.0]})
    assert window_overlap([40.0, 41.0, 39.5, 40.2, 40.1], apart) is None
    add_line_estimates(lines, profiled_ms=40.1, unprofiled=apart, events_per_step=10,
                       steps_ms=[40.0, 41.0, 39.5, 40.2, 40.1])
    assert lines[0]["profiler_ms_estimate"] == pytest.approx(22.1)


def _report(d):
    return {"ms_per_step": 40.0, "distortion": d, "unprofiled": {"ms_per_step": 40.0 / d} if d else None,
            "scenario": {"step": {"file": "/ws/train.py", "line": 42}, "program": {"cwd": "/ws"}}}


def _finding(kind):
    return {"kind": kind, "observation": "Obs.", "next_check": "Next.", "figures": {}}


def test_host_side_findings_say_the_profiler_distorts_them_and_name_the_check():
    found = mark_distorted([_finding("sync-in-step"), _finding("dominant-op")], _report(2.2))
    sync, dominant = found
    assert "made this step 2.20x slower (ms/step, the median: 40.00 ms profiled, 18.18 ms without it" in sync["observation"]
    assert sync["next_check"].endswith("`stepscope measure train.py --line 42`.")
    assert sync["figures"]["distortion"] == pytest.approx(2.2)
    assert dominant["observation"] == "Obs." and dominant["next_check"] == "Next."  # not host-side evidence


def test_without_an_unprofiled_figure_the_finding_says_the_distortion_is_unknown():
    f = mark_distorted([_finding("small-launches")], _report(None))[0]
    assert "not timed without the profiler" in f["observation"]
    assert "stepscope measure train.py --line 42" in f["next_check"]


def test_a_trace_stepscope_did_not_record_is_left_alone():
    report = {"ms_per_step": 10.0, "distortion": None, "scenario": None}
    assert mark_distorted([_finding("sync-in-step")], report)[0]["observation"] == "Obs."


def test_the_measure_command_names_a_function_step():
    report = {"scenario": {"step": {"file": "/elsewhere/serve.py", "function": "handle"}, "program": {"cwd": "/ws"}}}
    assert measure_command(report) == "stepscope measure /elsewhere/serve.py --function handle"


def test_the_measure_command_starts_the_program_where_the_profile_started_it():
    program = {"cwd": "/ws", "entry": {"kind": "script", "path": "/ws/main.py"}}
    function = {"scenario": {"step": {"file": "/ws/trainer/loop.py", "function": "Trainer.step"}, "program": program}}
    assert measure_command(function) == "stepscope measure main.py --function trainer/loop.py:Trainer.step"
    loop = {"scenario": {"step": {"file": "/ws/lib/loop.py", "line": 12}, "program": program}}
    assert measure_command(loop) == "stepscope measure lib/loop.py --line 12 --entry main.py"
    module = {"scenario": {"step": {"file": "/ws/lib/loop.py", "line": 12},
                           "program": {"cwd": "/ws", "entry": {"kind": "module", "name": "lib.run"}}}}
    assert measure_command(module) == "stepscope measure lib/loop.py --line 12 -m lib.run"


def test_a_finding_that_names_the_measure_check_is_not_told_it_twice():
    report = _report(2.2)
    f = _finding("sync-in-step")
    f["next_check"] = f"First time the step without the profiler: `{measure_command(report)}`; then move it."
    (marked,) = mark_distorted([f], report)
    assert marked["next_check"].count("stepscope measure train.py --line 42") == 1


def test_an_estimate_that_reaches_the_lines_whole_time_is_said_in_words_never_as_the_cap():
    from stepscope.analysis import present

    # 7.27 ms of wall, and the line's share of the difference at least that: the cap, not an estimate
    capped = {"wall_ms": 7.27, "profiler_ms_estimate": 7.27}
    words = present.profiler_cost_text(capped)
    assert words.startswith("most of this line's time may be the profiler's own cost") and "7.27" not in words
    below = {"wall_ms": 7.27, "profiler_ms_estimate": 2.5}
    assert present.profiler_cost_text(below).startswith("~2.50 ms of it is the profiler's own cost")
