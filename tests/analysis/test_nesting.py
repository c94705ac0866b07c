"""Operator nesting and self times: the compiled kernels give exactly the results of the reference Python."""

from __future__ import annotations

import math
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stepscope.analysis import nesting


def test_the_kernel_is_built() -> None:
    # `pip install` builds it (setup.py); without it the operator tree is built by the slower loop
    assert nesting._compiled is not None and nesting._compiled_self_times is not None, \
        "stepscope.analysis._nesting is not built: is a C compiler installed?"


def bits(lists) -> list:
    """Floats compared by their bits (0.0 and -0.0, or two NaN, are not the same here)."""
    return [[(math.copysign(1, v), v) if isinstance(v, float) else v for v in values] for values in lists]


def reference(rows_by_track: dict[int, list[int]], ts: array, dur: array) -> nesting.Nested:
    parent = array("i", [-1]) * len(ts)
    return nesting.Nested({t: nesting.nest_reference(rows, ts, dur, parent) for t, rows in rows_by_track.items()},
                          parent)


def test_nested_partial_and_equal_starts_nest_as_expected() -> None:
    # a [0, 10] holds b [1, 4] and c [4, 6]; c starts with the empty f [4, 4] and, longer, holds it;
    # d [5, 12] outlasts c and a: no parent, but it holds e [6, 7]; g is no op of this thread
    ts = array("d", [0.0, 1.0, 4.0, 5.0, 6.0, 4.0, 2.0])
    dur = array("d", [10.0, 3.0, 2.0, 7.0, 1.0, 0.0, 1.0])
    given = [5, 4, 3, 2, 1, 0]  # in any order
    for nested in (reference({0: given}, ts, dur), nesting.nest_tracks({0: given}, ts, dur)):
        rows, starts, ends, own = nested.tracks[0]
        assert rows == [0, 1, 2, 5, 3, 4]  # by start; c before f (same start, longer)
        assert starts == [0.0, 1.0, 4.0, 4.0, 5.0, 6.0] and ends == [10.0, 4.0, 6.0, 4.0, 12.0, 7.0]
        by_row = {r: (nested.parent[r], o) for r, o in zip(rows, own)}
        assert by_row[1] == (0, 3.0)
        assert by_row[2] == (0, 2.0)  # c starts where b ends: a sibling, not b's child
        assert by_row[5] == (2, 0.0)
        assert by_row[3] == (-1, 6.0)  # d outlasts a: no parent; holds e (1.0)
        assert by_row[4][0] == 3
        assert by_row[0][1] == 10.0 - 3.0 - 2.0
        assert nested.parent[6] == -1  # not an op given


def test_ops_alike_keep_the_order_given() -> None:
    ts = array("d", [1.0, 1.0, 1.0, 0.0])
    dur = array("d", [2.0, 2.0, 5.0, 9.0])
    for nested in (reference({3: [1, 0, 2, 3]}, ts, dur), nesting.nest_tracks({3: [1, 0, 2, 3]}, ts, dur)):
        assert nested.tracks[3][0] == [3, 2, 1, 0]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 15), st.sampled_from([0.0, 0.1, 1e-9, 0.25, 1 / 3, -0.0])),
                max_size=60), st.randoms(use_true_random=False))
def test_the_kernel_matches_the_reference(spans, random) -> None:
    ts = array("d", [s + frac for s, _, frac in spans])
    dur = array("d", [d * 0.7 + frac if d else frac for _, d, frac in spans])
    rows = list(range(len(spans)))
    random.shuffle(rows)
    given_rows = {7: rows[: len(rows) // 2], 8: rows[len(rows) // 2 :]}
    kernel, expected = nesting.nest_tracks(given_rows, ts, dur), reference(given_rows, ts, dur)
    for track in given_rows:
        assert bits(kernel.tracks[track]) == bits(expected.tracks[track])
    assert kernel.parent == expected.parent


class Line:
    def __init__(self, key: tuple):
        self.key = key


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from([0.0, -0.0, 1.5, -2.0, 1e-9, 1 / 3, 7.25]),
                          st.integers(0, 3)), max_size=80),
       st.dictionaries(st.tuples(st.integers(0, 5), st.sampled_from([nesting.NO_LINE, ("exact", "/a.py", 3)])),
                       st.sampled_from([0.0, 0.1, -0.0, 2.5]), max_size=4))
def test_self_times_add_up_like_the_reference(ops, held) -> None:
    # lines: None, two objects with the same key (one line, two occurrences), another line
    shared = ("exact", "/a.py", 3)
    line_objects = [None, Line(shared), Line(shared), Line(("function", "/b.py", 9))]
    names = array("i", [nid for nid, _, _ in ops])
    rows = list(range(len(ops)))
    own = [us for _, us, _ in ops]
    lines = [line_objects[k] for _, _, k in ops]
    counts_held = {key: 1 for key, _ in held}
    results = []
    for add in (nesting.add_self_times, nesting.add_self_times_reference):
        times, counts = dict(held), dict(counts_held)
        add(times, counts, names, rows, own, lines)
        results.append((list(times.items()), counts))
    (kernel_times, kernel_counts), (reference_times, reference_counts) = results
    assert kernel_counts == reference_counts
    assert [k for k, _ in kernel_times] == [k for k, _ in reference_times]  # first-seen order
    assert bits([[v for _, v in kernel_times]]) == bits([[v for _, v in reference_times]])


def test_self_times_clamp_negative_ops_and_group_occurrences_of_a_line() -> None:
    names = array("i", [4, 4, 4, 2])
    same = ("exact", "/a.py", 3)
    times: dict = {}
    counts: dict = {}
    nesting.add_self_times(times, counts, names, [0, 1, 2, 3], [2.0, -1.0, 0.5, 1.0],
                           [Line(same), Line(same), None, Line(same)])
    assert times == {(4, same): 2.0, (4, nesting.NO_LINE): 0.5, (2, same): 1.0}
    assert counts == {(4, same): 2, (4, nesting.NO_LINE): 1, (2, same): 1}  # calls by name and line, like times


def test_a_row_outside_the_columns_is_refused_on_both_paths() -> None:
    ts, dur = array("d", [0.0, 1.0]), array("d", [1.0, 1.0])
    with pytest.raises(IndexError):
        nesting.nest_tracks({0: [0, 2]}, ts, dur)
    with pytest.raises(IndexError):
        reference({0: [0, 2]}, ts, dur)
    for add in (nesting.add_self_times, nesting.add_self_times_reference):
        with pytest.raises(IndexError):
            add({}, {}, array("i", [0, 0]), [5], [1.0], [None])
