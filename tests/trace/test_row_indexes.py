"""Row indexes: the compiled `rows` and `rows_named` give exactly the rows of their Python lines."""

from __future__ import annotations

from array import array
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stepscope.trace import Kind, model, read_trace

from tests import corpus

# the traces shipped with the tests, then the public ones: the same list wherever the checkout lies
TRACES = sorted(p for p in corpus.DATA.rglob("*.json*") if p.name not in corpus.NOT_TRACES) + corpus.public_files()


def test_the_row_indexes_are_built() -> None:
    # `pip install` builds them (setup.py); without them every index is a pass in Python
    assert model._rows_in is not None and model._rows_by_kind is not None, \
        "stepscope.trace._rows is not built: is a C compiler installed?"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=200), st.sets(st.integers(-5, 60), max_size=12))
def test_rows_named_matches_the_reference(ids, wanted) -> None:
    trace = model.Trace(path=Path("t.json"), names=[f"n{i}" for i in range(41)])
    trace.name = array("i", ids)
    assert trace.rows_named(frozenset(wanted)) == model.rows_named_reference(trace.name, frozenset(wanted))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-1, 9), max_size=100))
def test_rows_with_a_detail_match_the_reference(ids) -> None:
    trace = model.Trace(path=Path("t.json"), names=[f"n{i}" for i in range(10)])
    assert trace.rows_with(array("i", ids)) == [r for r, i in enumerate(ids) if i >= 0]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 127), max_size=300))
def test_rows_by_kind_matches_the_reference(kinds) -> None:
    column = array("b", kinds)
    compiled, reference = model.rows_by_kind(column), model.rows_by_kind_reference(column)
    assert list(compiled) == list(reference)  # kinds in ascending order
    assert compiled == reference
    assert all(rows.typecode == "i" for rows in compiled.values())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from([0.0, 1.0, 2.5, 4.0, -0.0, 1e300]),
                          st.sampled_from([0.0, 0.5, 1.5, 3.0, -1.0]), st.integers(0, 4), st.integers(0, 5)),
                max_size=80),
       st.sampled_from([0.0, 1.0, 2.0]), st.sampled_from([1.0, 2.5, 4.0, float("inf")]),
       st.sets(st.integers(-1, 6), max_size=3), st.sets(st.integers(-1, 7), max_size=3))
def test_rows_overlapping_matches_the_reference(rows, lo, hi, skip_tracks, skip_names) -> None:
    trace = model.Trace(path=Path("t.json"), names=[f"n{i}" for i in range(6)], tracks=[(0, t) for t in range(5)])
    trace.kind = array("b", [kind for kind, *_ in rows])
    trace.ts = array("d", [ts for _, ts, *_ in rows])
    trace.dur = array("d", [dur for _, _, dur, *_ in rows])
    trace.track = array("i", [track for *_, track, _ in rows])
    trace.name = array("i", [name for *_, name in rows])
    for kind in range(4):
        found = trace.rows_overlapping(kind, lo, hi, skip_tracks=frozenset(skip_tracks), skip_names=frozenset(skip_names))
        expected = model.rows_overlapping_reference(trace, array("i", trace.rows(kind)), lo, hi, skip_tracks, skip_names)
        assert found == expected
        assert list(found) == list(expected)  # tracks in the order of their first row


@pytest.mark.parametrize("path", corpus.params(TRACES[::4]))
def test_real_traces_index_alike(path: Path) -> None:
    trace = read_trace(path)
    assert model.rows_by_kind(trace.kind) == model.rows_by_kind_reference(trace.kind)
    every_third = frozenset(range(0, len(trace.names), 3))
    assert trace.rows_named(every_third) == model.rows_named_reference(trace.name, every_third)
    assert trace.rows(Kind.CPU_OP) == [r for r in range(len(trace)) if trace.kind[r] == Kind.CPU_OP]
    for detail in (trace.stack, trace.shapes):
        assert trace.rows_with(detail) == [r for r in range(len(trace)) if detail[r] != -1]
    if len(trace):
        lo, hi = trace.ts[len(trace) // 3], trace.ts[len(trace) // 2]
        names = frozenset(range(0, len(trace.names), 5))
        assert trace.rows_overlapping(Kind.CPU_OP, lo, hi, skip_tracks={1}, skip_names=names) == \
            model.rows_overlapping_reference(trace, array("i", trace.rows(Kind.CPU_OP)), lo, hi, {1}, names)
    assert trace.rows(Kind.KERNEL, Kind.RUNTIME) == [r for r in range(len(trace))
                                                     if trace.kind[r] in (Kind.KERNEL, Kind.RUNTIME)]
