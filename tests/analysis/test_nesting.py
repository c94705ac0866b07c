"""Operator nesting: the compiled kernel gives exactly the lists of the reference loop."""

from __future__ import annotations

import math
from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from stepscope.analysis import nesting


def test_the_kernel_is_built() -> None:
    # `pip install` builds it (setup.py); without it the operator tree is built by the slower loop
    assert nesting._compiled is not None, "stepscope.analysis._nesting is not built: is a C compiler installed?"


def ordered(ts: array, dur: array) -> list[int]:
    return sorted(range(len(ts)), key=lambda r: (ts[r], -dur[r]))


def bits(lists) -> list:
    """Floats compared by their bits (0.0 and -0.0, or two NaN, are not the same here)."""
    return [[(math.copysign(1, v), v) if isinstance(v, float) else v for v in values] for values in lists]


def test_nested_partial_and_equal_starts_nest_as_expected() -> None:
    # a [0, 10] holds b [1, 4] and c [4, 6]; c starts with the empty f [4, 4] and, longer, holds it;
    # d [5, 12] outlasts c and a: no parent, but it holds e [6, 7]
    ts = array("d", [0.0, 1.0, 4.0, 5.0, 6.0, 4.0])
    dur = array("d", [10.0, 3.0, 2.0, 7.0, 1.0, 0.0])
    rows = ordered(ts, dur)
    for result in (nesting.nest_reference(rows, ts, dur), nesting.nest_tracks({0: rows}, ts, dur)[0]):
        starts, ends, up, own = result
        by_row = dict(zip(rows, zip(up, own)))
        assert by_row[1] == (0, 3.0)
        assert by_row[2] == (0, 2.0)  # c starts where b ends: a sibling, not b's child
        assert by_row[5] == (2, 0.0)
        assert by_row[3] == (-1, 6.0)  # d outlasts a: no parent; holds e (1.0)
        assert by_row[4][0] == 3
        assert by_row[0][1] == 10.0 - 3.0 - 2.0


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 15), st.sampled_from([0.0, 0.1, 1e-9, 0.25, 1 / 3])),
                max_size=60))
def test_the_kernel_matches_the_reference(spans) -> None:
    ts = array("d", [s + frac for s, _, frac in spans])
    dur = array("d", [d * 0.7 + frac for _, d, frac in spans])
    rows = ordered(ts, dur)
    kernel = nesting.nest_tracks({7: rows, 8: rows[::2]}, ts, dur)
    assert bits(kernel[7]) == bits(nesting.nest_reference(rows, ts, dur))
    assert bits(kernel[8]) == bits(nesting.nest_reference(rows[::2], ts, dur))
