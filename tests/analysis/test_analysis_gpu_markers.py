"""Steps marked only on a GPU stream: ms/step from the GPU spans, CPU time unknown, and the report says so.

Layout (µs). No CPU thread holds a ProfilerStep; the markers are `gpu_user_annotation` events:
  step 1  launches at 100 and 200 run [300, 2300] and [2300, 4000] on stream 7, marker [300, 4000];
          the optimizer's kernel, launched at 900 under `Optimizer.step#SGD.step`, runs [4000, 4200]
          outside the marker (Kineto draws the step's span only over work whose innermost label it is)
  step 2  launches at 1200 (stream 7) and 1300 (stream 8) run [4200, 6000] and [4500, 6500];
          one marker per stream: [4200, 6000] on 7 and [4500, 6500] on 8
  step 3  a launch at 2200 runs [6500, 7000], marker [6500, 7000]
Completions 4200, 6500, 7000; the first step runs from its first launch (100): 4.1, 2.3, 0.5 ms.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from .kineto_synth import Synth, run_folder
from .report_schema import REPORT_SCHEMA
from stepscope.analysis.render import render_text
from stepscope.analysis.report import analyze


def gpu_marked(*, cpu_markers: bool = False, host: bool = True) -> Synth:
    s = Synth()
    if cpu_markers:
        s.step(1, 50, 1050)
        s.step(2, 1100, 1000)
        s.step(3, 2100, 900)
    if host:
        s.region("ss:f0:5", 90, 160)
        s.region("Optimizer.step#SGD.step", 880, 70)
        s.region("ss:f0:5", 1190, 160)
        s.region("ss:f0:5", 2190, 60)
    launch = s.launch if host else (lambda ts, gpu_ts, dur, **kw: s.launch(ts, gpu_ts, dur, linked=False, **kw))
    launch(100, 300, 2000)
    launch(200, 2300, 1700)
    launch(900, 4000, 200)
    launch(1200, 4200, 1800, stream=7)
    launch(1300, 4500, 2000, stream=8)
    launch(2200, 6500, 500)
    s.gpu_step(1, 300, 3700)
    s.gpu_step(2, 4200, 1800, stream=7)
    s.gpu_step(2, 4500, 2000, stream=8)
    s.gpu_step(3, 6500, 500)
    return s


def test_steps_come_from_the_gpu_stream_markers_when_no_cpu_thread_has_them(tmp_path: Path) -> None:
    run = run_folder(tmp_path, gpu_marked())
    report = analyze([run / "trace.json"])
    jsonschema.validate(report, REPORT_SCHEMA)
    assert [s["name"] for s in report["steps"]] == ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"]
    # elapsed from the previous completion; step 1 includes the optimizer kernel that ran after its span,
    # step 2 ends with its longer stream (stream 8 at 6500)
    assert [s["ms"] for s in report["steps"]] == [4.1, 2.3, 0.5]
    assert report["ms_per_step"] == 2.3
    assert all(s["cpu_ms"] is None for s in report["steps"])  # unknown, not zero
    assert report["window"]["per"] == "step" and report["window"]["steps"] == 3
    assert any("markers on the GPU stream" in n and "cpu_ms null" in n for n in report["notes"])
    assert not any("no ProfilerStep#N" in n for n in report["notes"])
    # per-line figures are per step: the line launched 3700 + 2300 + 500 µs of GPU work in 3 steps
    line = report["lines"][0]
    assert (Path(line["file"]).name, line["line"]) == ("train.py", 5)
    assert line["gpu_ms"] == pytest.approx(6.5 / 3, abs=1e-4)
    assert line["kernels"] == 2
    regions = {r["label"]: r for r in report["regions"]}
    assert regions["Optimizer.step#SGD.step"]["gpu_ms"] == pytest.approx(0.2 / 3, abs=1e-4)
    assert report["window"]["gpu_ms"] == pytest.approx(6.7 / 3, abs=1e-4)  # GPU busy [300, 7000], per step
    assert render_text(report).startswith("2.300 ms/step (median of 3 active steps; mean 2.300 ms)")


def test_cpu_markers_win_over_gpu_markers(tmp_path: Path) -> None:
    report = analyze([gpu_marked(cpu_markers=True).write(tmp_path / "t.json")])
    # CPU spans 50..1100, 1100..2100, 2100..3000; completions from the GPU work launched in each
    assert [s["ms"] for s in report["steps"]] == [4.15, 2.3, 0.5]
    assert [s["cpu_ms"] for s in report["steps"]] == [1.05, 1.0, 0.9]
    assert not any("GPU stream" in n for n in report["notes"])


def test_a_device_only_trace_with_gpu_markers_has_steps(tmp_path: Path) -> None:
    # no launch call is in the trace (a trace cut down to its device events): each step starts and
    # completes on the GPU
    report = analyze([gpu_marked(host=False).write(tmp_path / "t.json")])
    assert [s["ms"] for s in report["steps"]] == [3.9, 2.3, 0.5]
    assert all(s["cpu_ms"] is None for s in report["steps"])
    assert report["attribution"]["gpu_unlinked"] == 6
    assert report["lines"] == []


def test_findings_of_gpu_marked_steps_count_host_moments_up_to_the_last_steps_completion(tmp_path: Path) -> None:
    # a `.item()` on line 7 after each step's last launch: host at 970, 1400 and 2300, 200 µs each. The
    # host span of a GPU-marked step is not recorded; step 3's wait starts after its last launch (2200)
    # and before it completes (7000), so it is the step's too: a wait in every step, not in 2 of 3
    s = gpu_marked()
    for ts in (970, 1400, 2300):
        s.region("ss:f0:7", ts - 5, 210)
        s.sync(ts, 200)
    # a launch from another thread (no region of its own) while line 5 runs on the main thread: line 5's
    s.launch(1250, 5000, 100, tid=200, stream=9)
    report = analyze([run_folder(tmp_path, s) / "trace.json"])
    assert report["ms_per_step"] == 2.3  # the waits and the extra kernel move no step boundary
    (f,) = [f for f in report["findings"] if f["kind"] == "sync-in-step"]
    assert Path(f["file"]).name == "train.py" and f["line"] == 7
    assert f["figures"]["steps"] == 3 and f["figures"]["sync_ms"] == pytest.approx(0.2)
    assert "in 3 of 3 active steps" in f["observation"]
    kernels = report["evidence"]["kernels"]
    assert kernels["count"] == pytest.approx(7 / 3, abs=0.01)
    assert (Path(kernels["file"]).name, kernels["line"]) == ("train.py", 5) and kernels["top_line_kernels"] == 2
    # the evidence's window is the steps' window: [100, 7000] over 3 steps
    assert report["evidence"]["step_mean_ms"] == 2.3
    assert "[sync-in-step] (train.py:7)" in render_text(report)


def test_gpu_marked_steps_are_taken_in_time_order_past_step_nine(tmp_path: Path) -> None:
    # ProfilerStep#10 sorts before ProfilerStep#9 as text: the steps must come in the order they ran
    s = Synth()
    for n, t in ((9, 0), (10, 1000), (11, 2000)):
        s.launch(t, t + 100, 800)
        s.gpu_step(n, t + 100, 800)
    report = analyze([s.write(tmp_path / "t.json")])
    assert [x["name"] for x in report["steps"]] == ["ProfilerStep#9", "ProfilerStep#10", "ProfilerStep#11"]
    assert [x["ms"] for x in report["steps"]] == [0.9, 1.0, 1.0]


def test_a_gpu_marker_drawn_on_two_streams_spans_both(tmp_path: Path) -> None:
    s = Synth()  # no launch is linked: a step's host start is its GPU span's start
    s.launch(0, 500, 500, stream=7, linked=False)  # 500 .. 1000
    s.launch(0, 200, 1300, stream=8, linked=False)  # 200 .. 1500
    s.gpu_step(1, 500, 500, stream=7)  # listed first, though it starts later
    s.gpu_step(1, 200, 1300, stream=8)
    s.launch(0, 1600, 400, linked=False)
    s.gpu_step(2, 1600, 400)
    report = analyze([s.write(tmp_path / "t.json")])
    # step 1 runs over both streams' spans, 200 .. 1500; step 2 from there to 2000
    assert [x["ms"] for x in report["steps"]] == [1.3, 0.5]


def test_a_step_whose_gpu_work_ends_before_the_previous_ones_gets_no_negative_time(tmp_path: Path) -> None:
    """Step 1's marker is short, but work it launched on stream 8 runs on to 5000 µs; step 2's own work
    ends at 3000, before that. Completions are monotonic, so step 2 lasts 0 ms (it completed with step 1,
    and a note says so), never -2 ms, and step 3 runs from 5000 to 6000, not from 3000."""
    from tests.conftest import run_stepscope

    s = Synth()
    s.launch(100, 300, 700)  # step 1's own work on stream 7
    s.launch(150, 350, 4650, stream=8)  # ... and a long kernel on stream 8, to 5000
    s.launch(1150, 1200, 1800)  # step 2's: ends at 3000
    s.launch(3100, 3200, 2800)  # step 3's: ends at 6000
    s.gpu_step(1, 300, 700)
    s.gpu_step(2, 1200, 1800)
    s.gpu_step(3, 3200, 2800)
    trace = s.write(tmp_path / "trace.json")
    r = run_stepscope("analyze", str(trace), "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    steps = [step["ms"] for step in report["steps"]]
    assert all(ms >= 0 for ms in steps), steps
    assert steps == [4.9, 0.0, 1.0]
    assert any(n.startswith("1 step(s) completed no later than the step before them") and "ProfilerStep#2" in n
               for n in report["notes"])
