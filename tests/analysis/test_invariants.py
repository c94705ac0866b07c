"""The report's invariants (invariants.py) hold on every trace we have: the committed test data, the
public corpora in shared/traces (public, public2), and traces generated here with hypothesis —
steps of unequal length (their median below their mean), nested regions, a second thread, GPU
work that outlives its step, host waits.

The shared corpora are found through tests/corpus.py (`STEPSCOPE_TEST_TRACES` points elsewhere);
without them those cases are skipped, saying where they looked.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .invariants import violations
from .kineto_synth import Synth, run_folder
from .test_analysis_properties import region_trees
from stepscope.analysis.report import analyze
from stepscope.errors import NotATraceError

from tests.corpus import DATA, PRESENT, PUBLIC, PUBLIC2, SHARED, params


def inputs(folder: Path) -> list[Path]:
    """Every analyze input under `folder`: run folders, folders of per-rank traces (and each of
    their traces), and lone trace files."""
    if not folder.is_dir():
        return []
    found: list[Path] = []
    for sub in sorted({p.parent for p in folder.rglob("*.json*")}):
        traces = sorted(p for p in sub.iterdir() if p.name.endswith((".json", ".json.gz")))
        if (sub / "files.json").is_file():
            found.append(sub)
            continue
        found.extend(traces)
        if len(traces) > 1 and all("rank" in t.name or t.name.startswith("worker") for t in traces):
            found.append(sub)
    return found


def _check(path: Path) -> None:
    try:
        report = analyze([path])
    except NotATraceError:
        pytest.skip(f"{path.name} is not a profiler trace (refused with a reason, which other tests check)")
    assert violations(report) == []


@pytest.mark.parametrize("path", inputs(DATA), ids=lambda p: str(p.relative_to(DATA)))
def test_every_committed_trace_keeps_the_invariants(path: Path) -> None:
    _check(path)


CORPUS = (inputs(PUBLIC) + inputs(PUBLIC2)) if PRESENT else []


@pytest.mark.slow
@pytest.mark.parametrize("path", params(CORPUS, ids=lambda p: str(p.relative_to(SHARED))))
def test_every_public_trace_keeps_the_invariants(path: Path) -> None:
    _check(path)


@st.composite
def windows(draw, *, second_thread: bool) -> Synth:
    """Steps of unequal length, each with a tree of line regions on the main thread (and sometimes one
    that overlaps them without nesting); some regions launch GPU work that may run past the step's
    end, some wait on the device; with `second_thread`, a worker thread runs user code at the same time."""
    s = Synth()
    t = 0
    for k in range(draw(st.integers(1, 5))):
        length = draw(st.sampled_from([1_000, 2_000, 9_000]))  # a long step lifts the mean above the median
        s.step(k + 1, t, length)
        for a, b, line in draw(region_trees(0, length)):
            s.region(f"ss:f0:{line}", t + a, b - a)
            if draw(st.booleans()):
                launch = t + draw(st.integers(a, b))
                s.launch(launch, launch + draw(st.integers(0, 500)), draw(st.integers(1, 4_000)))
            if draw(st.integers(0, 3)) == 0:
                at = t + draw(st.integers(a, b))
                s.sync(at, draw(st.integers(1, max(1, t + b - at))))
        if draw(st.booleans()):  # a region that overlaps others without nesting (a generator's suspended line)
            a = draw(st.integers(0, length - 1))
            s.region(f"ss:f0:{draw(st.integers(1, 6))}", t + a, draw(st.integers(1, length - a)))
        if second_thread:  # a worker thread running the user's code: a frame, or a line of the step's own file
            a = draw(st.integers(0, length - 1))
            span = draw(st.integers(1, length - a))
            if draw(st.booleans()):
                s.frame("model/net.py", draw(st.integers(1, 4)), "worker", t + a, span, tid=200)
            else:
                s.region(f"ss:f0:{draw(st.integers(1, 6))}", t + a, span, tid=200)
        t += length + draw(st.integers(0, 300))
    return s


def _generated(synth: Synth) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        run = run_folder(Path(tmp), synth)
        (Path(tmp) / "ws" / "model").mkdir()
        (Path(tmp) / "ws" / "model" / "net.py").write_text("\n" * 10)
        return analyze([run / "trace.json"])


@settings(max_examples=60, deadline=None)
@given(synth=windows(second_thread=False))
def test_generated_windows_on_one_thread_keep_the_invariants(synth: Synth) -> None:
    report = _generated(synth)
    assert violations(report) == []


@settings(max_examples=40, deadline=None)
@given(synth=windows(second_thread=True))
def test_generated_windows_with_a_second_thread_keep_the_invariants(synth: Synth) -> None:
    report = _generated(synth)
    assert violations(report, lines_on_one_thread=False) == []
    for line in report["lines"]:  # a line on two threads: its self time is still within its wall time
        assert line["cpu_self_ms"] <= line["wall_ms"] + 1e-4


@st.composite
def profiled_runs(draw) -> tuple[Synth, dict, int]:
    """A window whose step also ran without the profiler: some steps hold a short line of many small
    operators (where the profiler's cost per event concentrates), and the passes timed after the
    window are faster or slower than the profiled steps, by up to 20 times."""
    s = draw(windows(second_thread=False))
    steps = [e for e in s.events if e["name"].startswith("ProfilerStep#")]
    busy_line = draw(st.integers(7, 9))
    for step in steps:
        if draw(st.booleans()):
            at = step["ts"] + draw(st.integers(0, int(step["dur"]) - 60))
            s.region(f"ss:f0:{busy_line}", at, 50)
            for k in range(draw(st.integers(1, 40))):
                s.op("aten::add", at + k * 1.2, 1)
    passes = draw(st.lists(st.floats(0.05, 20.0), min_size=1, max_size=8))
    timings = {"warmup_ms": draw(st.lists(st.floats(0.05, 20.0), max_size=3)), "raw_ms": passes, "clock": "host"}
    return s, timings, busy_line


@settings(max_examples=60, deadline=None)
@given(case=profiled_runs())
def test_the_distortion_and_each_lines_estimate_keep_the_invariants(case) -> None:
    synth, timings, busy_line = case
    with tempfile.TemporaryDirectory() as tmp:
        scenario = {"step": {"file": str(Path(tmp) / "ws" / "train.py"), "line": 1, "function": None, "kind": "loop"},
                    "program": {"cwd": str(Path(tmp) / "ws")}}
        run = run_folder(Path(tmp), synth, scenario=scenario)
        (run / "timings.json").write_text(json.dumps(timings))
        report = analyze([run])
    assert report["unprofiled"] is not None and (report["distortion"] is not None or not report["ms_per_step"])
    assert violations(report) == []
    for line in report["lines"]:  # the hover's words for it never claim more than the line's time
        estimate = line["profiler_ms_estimate"]  # None only where the step recorded no event to share it by
        assert estimate is None or 0 <= estimate <= line["wall_ms"] + 1e-4


def test_a_short_line_of_many_operators_is_never_given_more_of_the_profilers_cost_than_its_time() -> None:
    """Ten times slower under the profiler, and a 0.05 ms line holding nearly every recorded event:
    shared out by events it would get ~8 ms; its estimate stops at its wall time."""
    s = Synth(devices=[])
    for k in range(5):
        t = k * 10_000
        s.step(k + 1, t, 10_000)
        s.region("ss:f0:3", t + 100, 9_000)
        s.region("ss:f0:4", t + 9_500, 50)
        for i in range(40):
            s.op("aten::add", t + 9_500 + i * 1.2, 1)
    with tempfile.TemporaryDirectory() as tmp:
        scenario = {"step": {"file": str(Path(tmp) / "ws" / "train.py"), "line": 1, "function": None, "kind": "loop"},
                    "program": {"cwd": str(Path(tmp) / "ws")}}
        run = run_folder(Path(tmp), s, scenario=scenario)
        (run / "timings.json").write_text(json.dumps({"warmup_ms": [], "raw_ms": [1.0] * 5, "clock": "host"}))
        report = analyze([run])
    assert report["distortion"] == pytest.approx(10.0, rel=1e-3)
    short = next(line for line in report["lines"] if line["line"] == 4)
    assert short["profiler_ms_estimate"] == pytest.approx(short["wall_ms"], abs=1e-4)
    assert violations(report) == []


def test_a_window_whose_steps_overlap_the_passes_after_it_keeps_the_invariants_and_the_check_sees_a_breach() -> None:
    """A loader step that alternates between a wait for data and none, in the window and after it
    (H200 figures): the medians land on different modes, the middles overlap. The analysis estimates
    no profiler cost and calls none; a report that did would be caught."""
    s = Synth(devices=[])
    t = 0
    for k, ms in enumerate([7.96, 38.54, 3.24, 43.95, 2.89]):
        s.step(k + 1, t, ms * 1000)
        s.region("ss:f0:3", t + 10, ms * 1000 - 20)
        s.op("aten::add", t + 20, 5)
        t += ms * 1000
    with tempfile.TemporaryDirectory() as tmp:
        scenario = {"step": {"file": str(Path(tmp) / "ws" / "train.py"), "line": 1, "function": None, "kind": "loop"},
                    "program": {"cwd": str(Path(tmp) / "ws")}}
        run = run_folder(Path(tmp), s, scenario=scenario)
        (run / "timings.json").write_text(json.dumps(
            {"warmup_ms": [], "raw_ms": [23.8, 44.1, 2.9, 41.7, 3.1], "clock": "host"}))
        report = analyze([run])
    assert report["distortion"] == pytest.approx(7.96 / 23.8, rel=1e-3)
    assert violations(report) == []
    assert all(line["profiler_ms_estimate"] is None for line in report["lines"])

    breached = json.loads(json.dumps(report))
    breached["lines"][0]["profiler_ms_estimate"] = 1.0
    assert any("both sides' step times overlap" in v for v in violations(breached))
