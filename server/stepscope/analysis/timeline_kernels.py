"""The loops of the timeline over columns: each track's layout, reduction, group figures, the
per-step partition of time. timeline.py and breakdown.py call them; they know nothing of traces.

    layout = layout_track(rows, columns, meaning, node_kind, w0, w1, launch, row_line, row_op, name_open)
    entries = reduce_spans(table_columns, a, b, resolution, keep_labelled, mixed)
    keys, counts, sums, unions = grouped(key1, key2, n2, starts, ends, select)
    times = partition(starts, ends, levels, n_levels, bounds)

Invariants:
- Each function here is the reference of its compiled twin in `_timeline.c` (built against the
  stable ABI, so its inputs arrive as bytes and its in/out columns as bytearrays): both give the
  same results (tested), the compiled one where it is built, this one elsewhere.
- A name's meaning is one packed int32 (`pack_meaning`): its category, its own line (an index into
  the timeline's lines, -1 for none), whether it is a line node (1: a Stepscope region, 2: a user
  frame) and whether it is an operator.
- Orders are total: spans by (start, -duration, row), so every path gives the same order.
- Every time is a union of intervals: nothing here adds nested or concurrent time twice.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

try:  # the compiled twins (_timeline.c); without them, the Python below gives the same results
    from . import _timeline as _compiled
except ImportError:
    _compiled = None

_LINE_BITS = 22
_LINE_MASK = (1 << _LINE_BITS) - 1
MAX_LINES = _LINE_MASK - 1  # lines a timeline can name (4 M)


def pack_meaning(category: int, own_line: int, node: int, is_op: bool) -> int:
    """One name's meaning as the layout reads it (see the module's invariants)."""
    return (own_line + 1) | (category << _LINE_BITS) | (node << 27) | (int(is_op) << 29)


@dataclass
class Columns:
    """The trace's columns a layout reads: arrays for the Python path, bytes for the compiled one."""

    ts: array
    dur: array
    name: array

    def __post_init__(self) -> None:
        self._bytes: tuple[bytes, bytes, bytes] | None = None

    def as_bytes(self) -> tuple[bytes, bytes, bytes]:
        if self._bytes is None:
            self._bytes = (self.ts.tobytes(), self.dur.tobytes(), self.name.tobytes())
        return self._bytes


@dataclass
class TrackLayout:
    """One track's spans in order, in columns (see timeline.py for what each means)."""

    order: array  # "i": the trace row of each span
    start: array  # "d": clipped to the window
    end: array  # "d"
    depth: array  # "i"
    parent: array  # "i": index within the track, -1 at depth 0
    line: array  # "i"
    category: array  # "b"
    own: array  # "d": an operator's self time (its duration less that of the operators it holds), else 0
    outer: array  # "b": operators: 2 where no operator of the same name holds it, else 1; 0 for other spans
    node: array  # "b": 1 for a line node (of `node_kind`, with a line)
    name: array  # "i": the name id of each span
    launch_op: array  # "i": GPU spans: the name id of the operator holding their launch call, else -1


def int_column(n: int, value: int = -1) -> bytearray:
    """A bytearray of `n` int32, all `value` (an in/out column of the kernels)."""
    return bytearray(array("i", [value]) * n)


MainNodes = tuple[array, array, array]  # the main thread's line nodes: starts, ends, lines (in start order)


def layout_track(rows: list[int], columns: Columns, meaning: array, node_kind: int, w0: float, w1: float,
                 launch: dict[int, int] | None, row_line: bytearray, row_op: bytearray, name_open: bytearray,
                 offset: int = 0, main_nodes: MainNodes | None = None) -> TrackLayout:
    """One track's spans: order, clipped times, depth, parent, line, category, operators' self times.

    `meaning` holds one packed meaning per name id. `launch` (GPU tracks) maps a trace row to the row
    of its launch call: a span without a line of its own takes that call's line from `row_line`, and
    its `launch_op` from `row_op`. On CPU tracks, a span without a line of its own takes the line passed down by the
    innermost open span (a line node of `node_kind` passes its own line, others what they got).
    Writes each span's line into `row_line` and, for runtime calls, the name id of the innermost
    operator holding them into `row_op` (-1 for none). `name_open` is scratch (one int32 per name,
    zero before and after). Parents are span indices counted from `offset` (the track's first span).
    With `main_nodes` (a track other than the main thread's), a span still without a line takes the
    line of the innermost main-thread node open at its start (at its launch call's start, on a GPU
    stream), as attribution places moments of threads without lines."""
    if _compiled is not None:
        ts, dur, name = columns.as_bytes()
        nodes = tuple(c.tobytes() for c in main_nodes) if main_nodes is not None else None
        parts = _compiled.layout_track(rows, ts, dur, name, meaning.tobytes(), node_kind, w0, w1, launch, row_line,
                                       row_op, name_open, offset, nodes)
        return TrackLayout(*(_array(code, data) for code, data in zip("iddiiibdbbii", parts)))
    return layout_track_reference(rows, columns, meaning, node_kind, w0, w1, launch, row_line, row_op, name_open,
                                  offset, main_nodes)


def _array(code: str, data: bytes) -> array:
    out = array(code)
    out.frombytes(data)
    return out


RUNTIME_CATEGORIES = (5, 6)  # timeline.CATEGORIES' "runtime" and "sync": calls an operator may hold


def layout_track_reference(rows: list[int], columns: Columns, meaning: array, node_kind: int, w0: float, w1: float,
                           launch: dict[int, int] | None, row_line: bytearray, row_op: bytearray,
                           name_open: bytearray, offset: int = 0, main_nodes: MainNodes | None = None) -> TrackLayout:
    ts, dur, name_col = columns.ts, columns.dur, columns.name
    row_line_v = memoryview(row_line).cast("i")
    row_op_v = memoryview(row_op).cast("i")
    open_names = memoryview(name_open).cast("i")
    order = sorted(rows, key=lambda r: (ts[r], -dur[r], r))
    n = len(order)
    out = TrackLayout(array("i", order), array("d", [0.0]) * n, array("d", [0.0]) * n, array("i", [0]) * n,
                      array("i", [0]) * n, array("i", [0]) * n, array("b", [0]) * n, array("d", [0.0]) * n,
                      array("b", [0]) * n, array("b", [0]) * n, array("i", [0]) * n, array("i", [-1]) * n)
    unplaced: list[int] = []
    times = array("d")
    open_end: list[float] = []
    open_idx: list[int] = []
    open_line: list[int] = []
    op_end: list[float] = []
    op_idx: list[int] = []
    op_name: list[int] = []
    for k, r in enumerate(order):
        s = ts[r]
        d = dur[r]
        e = s + d
        nid = name_col[r]
        m = meaning[nid]
        own = (m & _LINE_MASK) - 1
        cat = (m >> _LINE_BITS) & 31
        node = (m >> 27) & 3
        while open_end and open_end[-1] <= s:
            open_end.pop()
            open_idx.pop()
            open_line.pop()
        inherited = open_line[-1] if open_line else -1
        call = -1
        if own >= 0:
            line = own
        elif launch is not None:
            call = launch.get(r, -1)
            line = row_line_v[call] if call >= 0 else -1
        else:
            line = inherited
        if launch is not None:
            out.launch_op[k] = row_op_v[call]  # row -1 reads the last entry: always -1
        if line < 0 and main_nodes is not None and (launch is None or call >= 0):
            unplaced.append(k)
            times.append(ts[call] if launch is not None else s)
        row_line_v[r] = line
        out.start[k] = s if s > w0 else w0
        out.end[k] = e if e < w1 else w1
        out.depth[k] = len(open_end)
        out.parent[k] = open_idx[-1] + offset if open_idx else -1
        out.line[k] = line
        out.category[k] = cat
        out.name[k] = nid
        open_end.append(e)
        open_idx.append(k)
        is_node = node == node_kind and own >= 0
        out.node[k] = is_node
        open_line.append(own if is_node else inherited)
        if (m >> 29) & 1 or cat in RUNTIME_CATEGORIES:
            while op_end and op_end[-1] <= s:
                op_end.pop()
                op_idx.pop()
                open_names[op_name.pop()] -= 1
            if not (m >> 29) & 1:  # a runtime call: the operator holding it launched its work
                row_op_v[r] = op_name[-1] if op_name else -1
                continue
            out.own[k] = d
            if op_end and op_end[-1] >= e:  # held by the enclosing operator: not that one's own time
                out.own[op_idx[-1]] -= d
            out.outer[k] = 1 if open_names[nid] else 2
            op_end.append(e)
            op_idx.append(k)
            op_name.append(nid)
            open_names[nid] += 1
    for nid in op_name:
        open_names[nid] -= 1
    if unplaced:
        assert main_nodes is not None
        for k, line in zip(unplaced, innermost_lines_reference(*main_nodes, times)):
            out.line[k] = line
            row_line_v[out.order[k]] = line
    return out


def examples(rows: list[int], name: array, n_names: int) -> array:
    """One row of each name among `rows` ("i" by name id: the last such row, -1 for names not there)."""
    if _compiled is not None:
        return _array("i", _compiled.examples(rows, name.tobytes(), n_names))
    return examples_reference(rows, name, n_names)


def examples_reference(rows: list[int], name: array, n_names: int) -> array:
    out = array("i", [-1]) * n_names
    for nid, r in dict(zip(map(name.__getitem__, rows), rows)).items():
        out[nid] = r
    return out


def innermost_lines(node_start: array, node_end: array, node_line: array, times: array) -> array:
    """For each time (any order), the line of the innermost node open then (nodes in start order, as a
    layout gives them: nested or disjoint), -1 where none is; aligned with `times`."""
    if _compiled is not None:
        return _array("i", _compiled.innermost_lines(node_start.tobytes(), node_end.tobytes(), node_line.tobytes(),
                                                     times.tobytes()))
    return innermost_lines_reference(node_start, node_end, node_line, times)


def innermost_lines_reference(node_start: array, node_end: array, node_line: array, times: array) -> array:
    out = array("i", [-1]) * len(times)
    stack: list[tuple[float, int]] = []
    j, n = 0, len(node_start)
    for q in sorted(range(len(times)), key=lambda q: (times[q], q)):
        t = times[q]
        while j < n and node_start[j] <= t:
            while stack and stack[-1][0] <= node_start[j]:
                stack.pop()
            stack.append((node_end[j], node_line[j]))
            j += 1
        while stack and stack[-1][0] <= t:
            stack.pop()
        if stack:
            out[q] = stack[-1][1]
    return out


def grouped(key1: array, key2: array | None, n2: int, starts: array, ends: array,
            select: bytes | None = None, unions: bool = True) -> tuple[array, array, array, array]:
    """Figures of intervals by key, ascending: how many, the sum of their lengths, the length of their
    union. The key of interval i is `key1[i]`, or `key1[i] * n2 + key2[i] + 1` with `key2` ("i" columns,
    aligned with "d" `starts` and `ends`); intervals with a negative `key1`, or a zero byte in `select`,
    are left out. Sums add in the order of the intervals given with `unions` false (the unions are
    then all 0: no sort is needed, a table of keys is), in their order by (key, start) otherwise."""
    if _compiled is not None:
        parts = _compiled.grouped(key1.tobytes(), key2.tobytes() if key2 is not None else None, n2, starts.tobytes(),
                                  ends.tobytes(), select, int(unions))
        return tuple(_array(code, data) for code, data in zip("qqdd", parts))  # type: ignore[return-value]
    return grouped_reference(key1, key2, n2, starts, ends, select, unions)


def grouped_reference(key1: array, key2: array | None, n2: int, starts: array, ends: array,
                      select: bytes | None = None, unions: bool = True) -> tuple[array, array, array, array]:
    rows = []
    for i in range(len(key1)):
        if key1[i] < 0 or (select is not None and not select[i]):
            continue
        key = key1[i] * n2 + key2[i] + 1 if key2 is not None else key1[i]
        rows.append((key, starts[i], i))
    if not unions:
        figures: dict[int, list] = {}
        for key, _, i in rows:
            entry = figures.setdefault(key, [0, 0.0])
            entry[0] += 1
            entry[1] += ends[i] - starts[i]
        keys = sorted(figures)
        return (array("q", keys), array("q", [figures[k][0] for k in keys]), array("d", [figures[k][1] for k in keys]),
                array("d", [0.0]) * len(keys))
    rows.sort()
    out_keys, counts, sums, unions_out = array("q"), array("q"), array("d"), array("d")
    covered = 0.0
    for key, _, i in rows:
        s, e = starts[i], ends[i]
        if not out_keys or out_keys[-1] != key:
            out_keys.append(key)
            counts.append(0)
            sums.append(0.0)
            unions_out.append(0.0)
            covered = -float("inf")
        counts[-1] += 1
        sums[-1] += e - s
        if s >= covered:
            unions_out[-1] += e - s
            covered = e
        elif e > covered:
            unions_out[-1] += e - covered
            covered = e
    return out_keys, counts, sums, unions_out


def partition(starts: array, ends: array, levels: bytes, n_levels: int, bounds: array,
              parent: array | None = None) -> array:
    """The time of each of `len(bounds) - 1` consecutive periods (bounds ascending) at each level:
    a moment counts at the lowest level of the intervals covering it (levels 0..n_levels-1; intervals
    of a higher level are not counted), and moments no interval covers count nowhere. `levels` holds
    one byte per interval. Returns `periods * n_levels` figures, period-major.

    With `parent` (a layout's: the interval holding each one at its start, -1 for none), an interval
    its parent covers whole at a level no higher is skipped: it changes no moment's level, and most
    spans of a trace are such children."""
    if _compiled is not None:
        return _array("d", _compiled.partition(starts.tobytes(), ends.tobytes(), bytes(levels), n_levels,
                                               bounds.tobytes(), parent.tobytes() if parent is not None else None))
    return partition_reference(starts, ends, levels, n_levels, bounds, parent)


def _covered_by_parent(i: int, starts: array, ends: array, levels: bytes, parent: array) -> bool:
    p = parent[i]
    return p >= 0 and levels[p] <= levels[i] and starts[p] <= starts[i] and ends[i] <= ends[p]


def partition_reference(starts: array, ends: array, levels: bytes, n_levels: int, bounds: array,
                        parent: array | None = None) -> array:
    periods = max(0, len(bounds) - 1)
    out = array("d", [0.0]) * (periods * n_levels)
    if periods == 0:
        return out
    changes: dict[float, list[tuple[int, int]]] = {}  # time -> (level, +1 / -1)
    for i, (s, e, level) in enumerate(zip(starts, ends, levels)):
        if parent is not None and _covered_by_parent(i, starts, ends, levels, parent):
            continue
        if e > s and level < n_levels:
            changes.setdefault(s, []).append((level, 1))
            changes.setdefault(e, []).append((level, -1))
    for bound in bounds:
        changes.setdefault(bound, [])
    active = [0] * n_levels
    period = 0
    previous = None
    for t in sorted(changes):
        if previous is not None and previous >= bounds[0] and t <= bounds[-1]:
            while period < periods - 1 and bounds[period + 1] <= previous:
                period += 1
            level = next((lv for lv in range(n_levels) if active[lv] > 0), -1)
            if level >= 0:
                out[period * n_levels + level] += t - previous
        for level, delta in changes[t]:
            active[level] += delta
        previous = t
    return out


@dataclass
class SpanColumns:
    """A span table's columns as the reduction reads them (timeline.SpanTable)."""

    start: array
    end: array
    track: array
    category: array
    depth: array
    parent: array


@dataclass
class Entries:
    """What a summary shows, sorted by (track, start, -end): per entry the span it shows (for a merged
    span, its longest member), its extent, and for merged spans their member count (0: one span, as
    is) and busy time; `category` is "mixed" for members of several."""

    index: array  # "i"
    start: array  # "d"
    end: array  # "d"
    count: array  # "i"
    busy: array  # "d"
    category: array  # "b"

    def __len__(self) -> int:
        return len(self.index)


def reduce_spans(cols: SpanColumns, a: float, b: float, resolution: float, keep_labelled: bool, mixed: bool,
                 never_merged: bytes, mixed_category: int, widest: float) -> Entries:
    """The spans of [a, b], clipped; with `resolution` > 0, reduced (timeline.py states the rules).

    `never_merged` holds one byte per category (1: never merged while `keep_labelled`); a merged span
    grows no wider than `widest` µs."""
    if _compiled is not None:
        parts = _compiled.reduce_spans(cols.start.tobytes(), cols.end.tobytes(), cols.track.tobytes(),
                                       cols.category.tobytes(), cols.depth.tobytes(), cols.parent.tobytes(), a, b,
                                       resolution, int(keep_labelled), int(mixed), never_merged, mixed_category, widest)
        return Entries(*(_array(code, data) for code, data in zip("iddidb", parts)))
    return reduce_spans_reference(cols, a, b, resolution, keep_labelled, mixed, never_merged, mixed_category, widest)


class _Group:
    """Spans merged into one: members of one track, depth, parent and category, and what they hold."""

    __slots__ = ("track", "depth", "parent", "category", "start", "end", "first_end", "busy", "covered", "count",
                 "longest", "longest_us")

    def __init__(self, i: int, track: int, depth: int, parent: int, category: int, s: float, e: float):
        self.track, self.depth, self.parent, self.category = track, depth, parent, category
        self.start, self.end, self.first_end, self.covered, self.busy = s, e, e, e, e - s
        self.count, self.longest, self.longest_us = 1, i, e - s

    def fold(self, s: float, e: float) -> None:
        """Add an interval that starts no earlier than every one added before (spans come in start order)."""
        if s >= self.covered:
            self.busy += e - s
            self.covered = e
        elif e > self.covered:
            self.busy += e - self.covered
            self.covered = e
        if e > self.end:
            self.end = e


def reduce_spans_reference(cols: SpanColumns, a: float, b: float, resolution: float, keep_labelled: bool,
                           mixed: bool, never_merged: bytes, mixed_category: int, widest: float) -> Entries:
    S, E, T, C, D, P = cols.start, cols.end, cols.track, cols.category, cols.depth, cols.parent
    rows: list[tuple] = []  # (track, start, end, index, count, busy, category)
    swallowed: dict[int, _Group] = {}  # span index -> the group that holds it (a member, or inside one)
    open_groups: dict[int, _Group] = {}  # depth -> the group still growing there, on the current track
    current = -1

    def close(g: _Group) -> None:
        if g.count == 1 and g.end == g.first_end:  # one span, nothing of it outside it: shown as is
            rows.append((g.track, g.start, g.end, g.longest, 0, g.end - g.start, g.category))
        else:
            rows.append((g.track, g.start, g.end, g.longest, g.count, g.busy, g.category))

    for i in range(len(S)):
        s, e = S[i], E[i]
        if not ((s < b and e > a) or (s == e and a <= s <= b)):
            continue
        s = s if s > a else a
        e = e if e < b else b
        t = T[i]
        if t != current:
            for g in open_groups.values():
                close(g)
            open_groups = {}
            current = t
        c = C[i]
        if resolution <= 0:
            rows.append((t, s, e, i, 0, e - s, c))
            continue
        labelled = keep_labelled and never_merged[c]
        p = P[i]
        holder = swallowed.get(p) if p >= 0 else None
        if holder is not None and not labelled:
            holder.fold(s, e)  # inside a span too short to show: its time is the merged span's
            swallowed[i] = holder
            continue
        d = D[i]
        g = open_groups.get(d)
        if labelled or e - s >= resolution:
            if g is not None:
                close(open_groups.pop(d))
            rows.append((t, s, e, i, 0, e - s, c))
            continue
        if (g is not None and g.parent == p and (g.category == c or mixed) and s - g.end < resolution
                and e - g.start <= widest):
            g.count += 1
            if c != g.category:
                g.category = mixed_category
            if e - s > g.longest_us:
                g.longest, g.longest_us = i, e - s
            g.fold(s, e)
        else:
            if g is not None:
                close(g)
            g = open_groups[d] = _Group(i, t, d, p, c, s, e)
        swallowed[i] = g
    for g in open_groups.values():
        close(g)
    rows.sort(key=lambda x: (x[0], x[1], -x[2], x[3]))
    return Entries(array("i", [r[3] for r in rows]), array("d", [r[1] for r in rows]), array("d", [r[2] for r in rows]),
                   array("i", [r[4] for r in rows]), array("d", [r[5] for r in rows]), array("b", [r[6] for r in rows]))


def rounded(values: array, origin: float, others: array | None = None) -> list[float]:
    """`values` less `origin` (or less `others`, aligned), in µs rounded to the nanosecond (half away
    from zero), as a list for JSON."""
    if _compiled is not None:
        return _array("d", _compiled.rounded(values.tobytes(), origin,
                                             others.tobytes() if others is not None else None)).tolist()
    return rounded_reference(values, origin, others)


def rounded_reference(values: array, origin: float, others: array | None = None) -> list[float]:
    if others is None:
        return [_round_ns(v - origin) for v in values]
    return [_round_ns(v - o) for v, o in zip(values, others)]


def _round_ns(us: float) -> float:
    scaled = us * 1000.0
    whole = float(int(abs(scaled) + 0.5))  # what C's round() gives (half away from zero)
    return (whole if scaled >= 0 else -whole) / 1000.0


def longest_at(starts: array, ends: array, k: int) -> float:
    """The k-th longest of the intervals (0: the longest); 0 when there are not more than k."""
    if k >= len(starts):
        return 0.0
    if _compiled is not None:
        return _compiled.longest_at(starts.tobytes(), ends.tobytes(), k)
    return sorted((e - s for s, e in zip(starts, ends)), reverse=True)[k]

