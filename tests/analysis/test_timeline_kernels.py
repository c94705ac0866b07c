"""The timeline's compiled kernels (_timeline.c) give exactly the results of the reference Python."""

from __future__ import annotations

import math
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stepscope.analysis import timeline_kernels as k

pytestmark = pytest.mark.skipif(k._compiled is None, reason="stepscope.analysis._timeline is not built")


def test_the_kernels_are_built() -> None:
    # `pip install` builds them (setup.py); without them the timeline is built by the slower Python
    assert k._compiled is not None, "stepscope.analysis._timeline is not built: is a C compiler installed?"


def bits(values) -> list:
    """Floats compared by their bits (0.0 and -0.0 differ here)."""
    return [(math.copysign(1, v), v) if isinstance(v, float) else v for v in values]


def same_layout(a: k.TrackLayout, b: k.TrackLayout) -> None:
    for field in ("order", "start", "end", "depth", "parent", "line", "category", "own", "outer", "node", "name",
                  "launch_op"):
        assert bits(getattr(a, field)) == bits(getattr(b, field)), field


TIMES = st.sampled_from([0.0, 0.5, 1.0, 1 / 3, 2.0, 3.0, 5.0, 8.0, 1e-9])
events = st.lists(st.tuples(st.integers(0, 30), TIMES), min_size=0, max_size=60)
meanings = st.lists(st.tuples(st.integers(0, 16), st.integers(-1, 5), st.integers(0, 2), st.booleans()),
                    min_size=6, max_size=6)


@settings(max_examples=400, deadline=None)
@given(cpu=events, gpu=events, meaning=meanings, node_kind=st.sampled_from([1, 2]),
       window=st.tuples(st.integers(0, 10), st.integers(10, 40)), launches=st.lists(st.integers(-1, 80), max_size=60),
       nodes=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 10), st.integers(-1, 4)), max_size=8))
def test_layout_matches_the_reference(cpu, gpu, meaning, node_kind, window, launches, nodes) -> None:
    ts = array("d", [float(s) for s, _ in cpu + gpu])
    dur = array("d", [d for _, d in cpu + gpu])
    names = array("i", [i % 6 for i in range(len(ts))])
    packed = array("i", [k.pack_meaning(c, own, node, op) for c, own, node, op in meaning])
    cols = k.Columns(ts, dur, names)
    cpu_rows = list(range(len(cpu)))[::-1]
    gpu_rows = list(range(len(cpu), len(ts)))
    launch = {g: r % max(1, len(cpu)) for g, r in zip(gpu_rows, launches) if r >= 0 and cpu}
    node_cols = sorted(nodes)
    main_nodes = (array("d", [float(s) for s, _, _ in node_cols]), array("d", [float(s + d) for s, d, _ in node_cols]),
                  array("i", [line for _, _, line in node_cols]))
    results = []
    for fn in (k.layout_track, k.layout_track_reference):
        row_line, row_op, name_open = k.int_column(len(ts) + 1), k.int_column(len(ts) + 1), k.int_column(6, 0)
        first = fn(cpu_rows, cols, packed, node_kind, *map(float, window), None, row_line, row_op, name_open, 0, None)
        second = fn(gpu_rows, cols, packed, node_kind, *map(float, window), launch, row_line, row_op, name_open,
                    len(cpu_rows), main_nodes)
        assert bytes(name_open) == bytes(k.int_column(6, 0))  # scratch left as found
        results.append((first, second, bytes(row_line), bytes(row_op)))
    (a1, a2, a_line, a_op), (b1, b2, b_line, b_op) = results
    same_layout(a1, b1)
    same_layout(a2, b2)
    assert a_line == b_line and a_op == b_op


@settings(max_examples=300, deadline=None)
@given(nodes=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 10), st.integers(-1, 4)), max_size=12),
       times=st.lists(st.sampled_from([0.0, 1.0, 2.5, 7.0, 12.0, 30.0, 41.0]), max_size=20))
def test_innermost_lines_match_the_reference(nodes, times) -> None:
    nodes = sorted(nodes, key=lambda n: (n[0], -n[1]))
    cols = (array("d", [float(s) for s, _, _ in nodes]), array("d", [float(s + d) for s, d, _ in nodes]),
            array("i", [line for _, _, line in nodes]))
    t = array("d", times)
    assert list(k.innermost_lines(*cols, t)) == list(k.innermost_lines_reference(*cols, t))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-2, 3), st.integers(-1, 2), TIMES, TIMES, st.booleans()), max_size=40),
       st.booleans(), st.booleans(), st.booleans())
def test_grouped_matches_the_reference(rows, with_key2, with_select, unions) -> None:
    key1 = array("i", [r[0] for r in rows])
    key2 = array("i", [r[1] for r in rows]) if with_key2 else None
    starts = array("d", [r[2] for r in rows])
    ends = array("d", [r[2] + r[3] for r in rows])
    select = bytes(int(r[4]) for r in rows) if with_select else None
    got = k.grouped(key1, key2, 4, starts, ends, select, unions)
    want = k.grouped_reference(key1, key2, 4, starts, ends, select, unions)
    assert [bits(x) for x in got] == [bits(x) for x in want]
    if not unions:  # the same counts and sums (to rounding) as the sorted path
        full = k.grouped_reference(key1, key2, 4, starts, ends, select, True)
        assert list(got[0]) == list(full[0]) and list(got[1]) == list(full[1])
        assert list(got[2]) == pytest.approx(list(full[2]))


def test_grouped_by_hand() -> None:
    keys, counts, sums, unions = k.grouped(array("i", [2, 1, 2, 2, -1]), None, 0, array("d", [0.0, 5.0, 1.0, 10.0, 0.0]),
                                           array("d", [3.0, 6.0, 2.0, 11.0, 9.0]))
    assert list(keys) == [1, 2] and list(counts) == [1, 3]  # key -1 is left out
    assert list(sums) == [1.0, 5.0] and list(unions) == [1.0, 4.0]  # [0, 3] holds [1, 2]: counted once
    keys, counts, _, _ = k.grouped(array("i", [2, 2, 2]), array("i", [-1, 0, 0]), 10, array("d", [0.0, 1.0, 2.0]),
                                   array("d", [1.0, 2.0, 3.0]), bytes([1, 1, 0]))
    assert list(keys) == [20, 21] and list(counts) == [1, 1]  # key1 * 10 + key2 + 1; the third not selected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 8), st.integers(0, 3)), max_size=30),
       st.lists(st.integers(0, 25), min_size=0, max_size=5))
def test_partition_matches_the_reference(rows, bounds) -> None:
    starts = array("d", [float(s) for s, _, _ in rows])
    ends = array("d", [float(s + d) for s, d, _ in rows])
    levels = bytes(lv if lv < 3 else 255 for _, _, lv in rows)  # 255: not counted
    b = array("d", sorted(float(x) for x in bounds))
    assert bits(k.partition(starts, ends, levels, 4, b)) == bits(k.partition_reference(starts, ends, levels, 4, b))
    # the parents of a layout: skipping what they cover changes no figure
    order = sorted(range(len(rows)), key=lambda i: (starts[i], -(ends[i] - starts[i]), i))
    starts, ends = array("d", [starts[i] for i in order]), array("d", [ends[i] for i in order])
    levels = bytes(levels[i] for i in order)
    parent, stack = array("i"), []
    for i in range(len(order)):
        while stack and ends[stack[-1]] <= starts[i]:
            stack.pop()
        parent.append(stack[-1] if stack else -1)
        stack.append(i)
    skipped = k.partition(starts, ends, levels, 4, b, parent)
    assert bits(skipped) == bits(k.partition_reference(starts, ends, levels, 4, b, parent))
    assert list(skipped) == pytest.approx(list(k.partition_reference(starts, ends, levels, 4, b)), abs=1e-9)


def test_partition_by_hand() -> None:
    # level 0 over [2, 6], level 1 over [0, 10]; periods [0, 5] and [5, 8]
    # and a level beyond the last one, over [0, 10]: not counted
    out = k.partition(array("d", [2.0, 0.0, 0.0]), array("d", [6.0, 10.0, 10.0]), bytes([0, 1, 255]), 2,
                      array("d", [0.0, 5.0, 8.0]))
    assert list(out) == [3.0, 2.0, 1.0, 2.0]


@settings(max_examples=300, deadline=None)
@given(events, st.floats(0.0, 40.0), st.floats(0.0, 40.0), st.sampled_from([0.0, 0.5, 1.0, 3.0, 50.0]),
       st.booleans(), st.booleans(), st.lists(st.integers(0, 3), min_size=20, max_size=20))
def test_reduction_matches_the_reference(spans, a, b, resolution, keep, mixed, categories) -> None:
    # columns as a layout makes them: one track per third of the spans
    ts = array("d", [float(s) for s, _ in spans])
    dur = array("d", [d for _, d in spans])
    names = array("i", [0] * len(ts))
    cols = k.Columns(ts, dur, names)
    start, end, track, cat, depth, parent = (array("d"), array("d"), array("i"), array("b"), array("i"), array("i"))
    for t, rows in enumerate((list(range(0, len(ts), 3)), list(range(1, len(ts), 3)), list(range(2, len(ts), 3)))):
        lay = k.layout_track_reference(rows, cols, array("i", [k.pack_meaning(0, -1, 0, False)]), 1, 0.0, 40.0, None,
                                       k.int_column(len(ts) + 1), k.int_column(len(ts) + 1), k.int_column(1, 0),
                                       len(start))
        start.extend(lay.start)
        end.extend(lay.end)
        track.extend([t] * len(rows))
        cat.extend(categories[r % 20] for r in lay.order)
        depth.extend(lay.depth)
        parent.extend(lay.parent)
    sc = k.SpanColumns(start, end, track, cat, depth, parent)
    lo, hi = min(a, b), max(a, b)
    never = bytes([1, 0, 0, 1])
    got = k.reduce_spans(sc, lo, hi, resolution, keep, mixed, never, 3, 4 * resolution)
    want = k.reduce_spans_reference(sc, lo, hi, resolution, keep, mixed, never, 3, 4 * resolution)
    for field in ("index", "start", "end", "count", "busy", "category"):
        assert bits(getattr(got, field)) == bits(getattr(want, field)), field


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(TIMES, TIMES), max_size=30), st.integers(0, 35))
def test_longest_at_matches_the_reference(rows, rank) -> None:
    starts = array("d", [s for s, _ in rows])
    ends = array("d", [s + d for s, d in rows])
    want = sorted((e - s for s, e in zip(starts, ends)), reverse=True)[rank] if rank < len(rows) else 0.0
    assert k.longest_at(starts, ends, rank) == want


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(-1e9, 1e9, allow_nan=False), max_size=20), st.floats(-1e6, 1e6, allow_nan=False))
def test_rounding_matches_the_reference(values, origin) -> None:
    v = array("d", values)
    assert bits(k.rounded(v, origin)) == bits(k.rounded_reference(v, origin))
    assert bits(k.rounded(v, 0.0, v)) == bits(k.rounded_reference(v, 0.0, v))


def test_rounding_is_to_the_nanosecond() -> None:
    assert k.rounded(array("d", [1000.0004, 1000.0006, 998.9994]), 1000.0) == [0.0, 0.001, -1.001]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 9), max_size=30))
def test_examples_match_the_reference(names) -> None:
    col = array("i", names)
    rows = list(range(len(names)))
    assert list(k.examples(rows, col, 10)) == list(k.examples_reference(rows, col, 10))


def test_kernels_refuse_rows_and_names_outside_their_columns() -> None:
    cols = k.Columns(array("d", [0.0]), array("d", [1.0]), array("i", [0]))
    meaning = array("i", [0])
    with pytest.raises(IndexError):
        k.layout_track([5], cols, meaning, 1, 0.0, 1.0, None, k.int_column(2), k.int_column(2), k.int_column(1, 0))
    with pytest.raises(IndexError):
        k.examples([0], array("i", [7]), 3)
    with pytest.raises(ValueError):
        k.layout_track([0], cols, meaning, 1, 0.0, 1.0, None, k.int_column(1), k.int_column(2), k.int_column(1, 0))


def test_the_document_is_the_same_without_the_kernels(tmp_path, monkeypatch) -> None:
    from stepscope.analysis.links import build_links
    from stepscope.analysis.panel import timeline_document
    from stepscope.analysis.steps import find_steps
    from stepscope.trace import read_trace

    from .test_timeline import one_step

    trace = read_trace(one_step().write(tmp_path / "trace.json"))
    links = build_links(trace)
    steps = find_steps(trace, links)
    compiled = timeline_document(trace, links, steps, per="step", file_table=None, source_root=None, cap=1000)
    monkeypatch.setattr(k, "_compiled", None)
    assert timeline_document(trace, links, steps, per="step", file_table=None, source_root=None, cap=1000) == compiled
