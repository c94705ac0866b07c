"""Invariants of attribution on random nested regions (one thread, several steps).

Self times partition the labelled time: on one thread, the self times of all lines add up to the
union of all labelled intervals; a line's self time never exceeds its total, its total equals its
wall time, and no line's wall time exceeds the step.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .kineto_synth import Synth, run_folder
from stepscope.analysis.intervals import union_length
from stepscope.analysis.report import analyze

STEP_US = 10_000


@st.composite
def region_trees(draw, start: int = 0, end: int = STEP_US, depth: int = 0) -> list[tuple[int, int, int]]:
    """Non-overlapping sibling regions inside [start, end], each with nested children: (start, end, line)."""
    out = []
    t = start
    for _ in range(draw(st.integers(0, 3 if depth < 3 else 0))):
        if end - t < 4:
            break
        a = draw(st.integers(t, end - 2))
        b = draw(st.integers(a + 1, min(end, a + (end - start))))
        line = draw(st.integers(1, 6))
        out.append((a, b, line))
        out.extend(draw(region_trees(a, b, depth + 1)))
        t = b
    return out


@settings(max_examples=40, deadline=None)
@given(trees=st.lists(region_trees(), min_size=1, max_size=3))
def test_self_times_partition_the_labelled_time(trees) -> None:
    s = Synth(devices=[])
    intervals = []
    for k, tree in enumerate(trees):
        base = k * STEP_US
        s.step(k + 1, base, STEP_US)
        for a, b, line in tree:
            s.region(f"ss:f0:{line}", base + a, b - a)
            intervals.append((base + a, base + b))
    with tempfile.TemporaryDirectory() as tmp:
        report = analyze([run_folder(Path(tmp), s) / "trace.json"])
    n = len(trees)
    lines = report["lines"]
    assert {r["line"] for r in lines} == {line for tree in trees for _, _, line in tree}  # each labelled line, once
    assert len(lines) == len({r["line"] for r in lines})
    assert sum(r["cpu_self_ms"] for r in lines) == pytest.approx(union_length(intervals) / 1000 / n, abs=1e-3)
    for r in lines:
        assert 0 <= r["cpu_self_ms"] <= r["cpu_total_ms"] + 1e-9
        assert r["cpu_total_ms"] == pytest.approx(r["wall_ms"], abs=1e-9)
        assert r["wall_ms"] <= STEP_US / 1000 + 1e-9
    assert report["ms_per_step"] == STEP_US / 1000
