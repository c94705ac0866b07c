"""The report's invariants (invariants.py) hold on every trace we have: the committed test data, the
public corpora in shared/traces (public, public2), and traces generated here with hypothesis —
steps of unequal length (their median below their mean), nested regions, a second thread, GPU
work that outlives its step, host waits.

The shared corpora are found through tests/corpus.py (`STEPSCOPE_TEST_TRACES` points elsewhere);
without them those cases are skipped, saying where they looked.
"""

from __future__ import annotations

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
