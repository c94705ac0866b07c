"""Traces that once gave absurd figures in silence, through `stepscope analyze` as a user runs it (text
and JSON): no share above 100%, no time of years, no step of 0 ms, and every event the reader left out
or read otherwise than written named in a note. The traces are tests/data/traces/robustness/ (its
README says what each once gave)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .invariants import violations
from .kineto_synth import Synth
from tests.corpus import DATA

ROBUSTNESS = DATA / "robustness"
PERCENT = re.compile(r"(\d+(?:\.\d+)?)%")


def analyze(path: Path, cwd: Path) -> tuple[str, dict]:
    """(the text, the JSON) of `stepscope analyze PATH`."""
    runs = [subprocess.run([sys.executable, "-m", "stepscope", "analyze", str(path), *extra], cwd=cwd,
                           capture_output=True, text=True, timeout=120) for extra in ([], ["--json"])]
    for r in runs:
        assert r.returncode == 0, r.stderr
    return runs[0].stdout, json.loads(runs[1].stdout)


def shares_said(text: str) -> list[float]:
    return [float(p) for p in PERCENT.findall(text)]


def test_an_op_spanning_the_window_on_another_thread_holds_only_its_time_in_the_window(tmp_path: Path) -> None:
    """aten::long_blocking_op runs on thread 2 from 500 to 5500 µs; the window is 1000..4000 (3 steps of
    1 ms). Counted whole it was 1.67 ms per step, "167% of the mean step"; clipped, 1.00 ms, 100%."""
    text, report = analyze(ROBUSTNESS / "share_over_100_spanning_op.json", tmp_path)
    (dominant,) = [f for f in report["findings"] if f["kind"] == "dominant-op"]
    assert dominant["figures"]["self_ms"] == pytest.approx(1.0)
    assert dominant["figures"]["share"] == 1.0
    assert "holds 1.00 ms of CPU self time per step (100% of the 1.00 ms mean step)" in text
    assert max(shares_said(text)) <= 100
    assert violations(report) == []


@pytest.mark.parametrize("name, event, absurd", [
    ("share_over_100_swapped_ts_dur.json", "'aten::swapped' (ts 7 µs, dur 1712667379482786 µs)", "57088912649396%"),
    ("fuzz_0005_mi300_swap_ts_dur.json.gz", "'aten::as_strided' (ts 1 µs, dur 2199280225321 µs)", "29507469500%"),
])
def test_an_event_with_ts_and_dur_swapped_is_left_out_and_named(tmp_path: Path, name: str, event: str,
                                                               absurd: str) -> None:
    text, report = analyze(ROBUSTNESS / name, tmp_path)
    assert absurd not in text and all(p <= 100 for p in shares_said(text))
    note = next(n for n in report["notes"] if "more than a day away" in n)
    assert note.startswith("1 complete event(s) left out") and event in note
    assert event in text  # the text's notes say it too
    assert violations(report) == []


def test_a_swapped_step_marker_gives_no_step_of_years(tmp_path: Path) -> None:
    """A public CPU trace whose only step marker (and two ops) had ts and dur swapped: it read
    1,712,667,379,482.786 ms/step. The three events are left out, named; what is left is one window."""
    text, report = analyze(ROBUSTNESS / "fuzz_0017_cpu_swap_ts_dur_ms_per_step_1.7e12.json", tmp_path)
    assert report["ms_per_step"] is None and report["window"]["ms"] < 10
    assert "1712667379482" not in text.split("not observed / limits:")[0]  # no such figure, only in the note
    note = next(n for n in report["notes"] if "more than a day away" in n)
    assert note.startswith("3 complete event(s) left out") and "'ProfilerStep#10' (ts 2674 µs" in note
    window_text, window = analyze(ROBUSTNESS / "fuzz_0146_cpu_window_1.7e12ms.json", tmp_path)
    assert window["window"]["ms"] < 10 and "one window of 0.767 ms" in window_text
    assert "6 complete event(s) left out" in window_text and "and 3 more" in window_text


@pytest.mark.parametrize("name", ["silent_zero_ms_per_step_identical_steps.json",
                                  "silent_zero_ms_per_step_overlapping_steps.json"])
def test_markers_inside_the_step_before_them_are_no_steps_of_0_ms(tmp_path: Path, name: str) -> None:
    text, report = analyze(ROBUSTNESS / name, tmp_path)
    assert report["ms_per_step"] > 0 and all(s["ms"] > 0 for s in report["steps"])
    assert not text.startswith("0.000 ms/step")
    assert [s["name"] for s in report["steps"]] == ["ProfilerStep#1"]
    note = next(n for n in report["notes"] if "start inside the step before them" in n)
    assert "ProfilerStep#2, ProfilerStep#3 with ProfilerStep#1" in note
    assert violations(report) == []


def test_a_dur_that_is_not_a_number_is_read_as_0_and_the_events_are_named(tmp_path: Path) -> None:
    text, report = analyze(ROBUSTNESS / "silent_dur_string_NaN_read_as_0.json", tmp_path)
    assert ("3 complete event(s) whose dur is not a number (a string, true, NaN), read as 0 µs: 'ProfilerStep#1' "
            "at ts 1000 µs, 'ProfilerStep#2' at ts 2000 µs, 'ProfilerStep#3' at ts 3000 µs") in report["notes"]
    assert "read as 0 µs: 'ProfilerStep#1' at ts 1000 µs" in text
    # "abc", true and a list are no numbers either; a digit string is one (as it always was)
    s = Synth()
    s.step(1, 0, 1000)
    s.step(2, 1000, 1000)
    s.op("aten::mm", 100, 300)
    s.op("aten::add", 1100, 200)
    s.op("aten::relu", 1400, 50)
    s.op("aten::sum", 1500, 50)
    s.events[2]["dur"], s.events[3]["dur"], s.events[4]["dur"], s.events[5]["dur"] = "abc", True, [3], "50"
    _, odd = analyze(s.write(tmp_path / "odd.json"), tmp_path)
    note = next(n for n in odd["notes"] if "dur is not a number" in n)
    assert note.startswith("3 complete event(s)") and "'aten::mm' at ts 100 µs, 'aten::add' at ts 1100 µs, " \
                                                      "'aten::relu' at ts 1400 µs" in note


def test_a_second_trace_events_array_is_said_to_be_left_out(tmp_path: Path) -> None:
    s = Synth()
    s.step(1, 0, 1000)
    first = s.write(tmp_path / "one.json").read_text()
    doubled = first.rstrip().rstrip("}") + ', "traceEvents": [{"ph": "X", "name": "ProfilerStep#9", "ts": 0, ' \
                                           '"dur": 5, "pid": 1, "tid": 1}, {"ph": "i", "name": "x", "ts": 1}]}'
    (tmp_path / "two.json").write_text(doubled)
    text, report = analyze(tmp_path / "two.json", tmp_path)
    assert [st["name"] for st in report["steps"]] == ["ProfilerStep#1"]  # the first array is the one read
    assert ("the trace names traceEvents twice: only the first array was read, the later one (2 events) was left "
            "out") in report["notes"]
    assert "the later one (2 events) was left out" in text


def test_step_markers_on_a_track_with_kernels_are_steps_and_said(tmp_path: Path) -> None:
    text, report = analyze(ROBUSTNESS / "silent_steps_ignored_kernel_on_cpu_track.json", tmp_path)
    assert "no ProfilerStep#N events" not in text
    assert [s["name"] for s in report["steps"]] == ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"]
    assert any(n.startswith("device events were recorded on the CPU thread pid 1, tid 1") for n in report["notes"])
