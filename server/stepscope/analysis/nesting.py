"""How the operators of each thread nest: their order, each one's enclosing operator and self time;
and self time summed by name and line.

    nested = nest_tracks(rows_by_track, trace.ts, trace.dur)
    for track, (rows, starts, ends, own) in nested.tracks.items(): ...
    nested.parent[row]  # the enclosing operator's row
    add_self_times(times, counts, trace.name, rows, own, lines)  # both by (name id, line key)

Invariants:
- Each track's `rows` come out sorted by (start, -duration, position given): the enclosing op first
  when two start together, and ops alike in both kept in the order given. The lists `starts`,
  `ends` (start + duration) and `own` are aligned with them.
- `parent` is a column over every row of the trace: the row of the innermost operator still open
  at the op's start that also outlasts it (ends at or after its end); -1 for an op with none, and
  for every row that is not one of the ops given. An op that outlasts its enclosing one (a partial
  overlap) has no parent but still holds the ops inside it.
- `own[k]` is op k's duration less the durations of the ops it directly holds, subtracted in the
  order of `rows` (so the float result is the same on every path).
- `add_self_times` adds each op's self time, negative ones as 0, to its (name id, line key) in op
  order (so sums are the same float on every path), and counts the op under the same key.
- The compiled kernels (`_nesting.c`) and the Python here give identical results (tested); the
  Python is the reference, and what runs where the kernels are not built.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from itertools import compress, count, islice
from operator import eq

try:
    from ._nesting import add_self_times as _compiled_self_times, nest_rows as _compiled
except ImportError:  # not built here: the Python below gives the same results
    _compiled = _compiled_self_times = None

NO_LINE = (None, None, None)  # the line key of an op that no line holds


TrackNesting = tuple[list[int], list[float], list[float], list[float]]  # rows, starts, ends, own


@dataclass
class Nested:
    tracks: dict[int, TrackNesting]
    parent: array  # array("i"), one entry per row of the trace


def nest_tracks(rows_by_track: dict[int, list[int]], ts: array, dur: array) -> Nested:
    """Per track, the order and nesting of its operator rows, and every row's parent."""
    if _compiled is None:
        parent = array("i", [-1]) * len(ts)
        return Nested({track: nest_reference(rows, ts, dur, parent) for track, rows in rows_by_track.items()}, parent)
    ts_bytes, dur_bytes = ts.tobytes(), dur.tobytes()  # the kernel reads the columns as bytes
    parent_bytes = bytearray(b"\xff") * (len(ts) * array("i").itemsize)  # -1 everywhere (the kernel checks the size)
    tracks = {track: _compiled(rows, ts_bytes, dur_bytes, parent_bytes) for track, rows in rows_by_track.items()}
    parent = array("i")
    parent.frombytes(parent_bytes)
    return Nested(tracks, parent)


def order_ops(rows: list[int], ts: array, dur: array) -> list[int]:
    """`rows` sorted by (start, -duration), stable: by start with a C-level key, then the rare runs
    of equal starts by longest first."""
    rows = sorted(rows, key=ts.__getitem__)
    starts = list(map(ts.__getitem__, rows))
    n = len(rows)
    for k in compress(range(n - 1), map(eq, starts, islice(starts, 1, None))):
        if k and starts[k - 1] == starts[k]:
            continue  # inside a run already sorted from its first element
        end = k + 1
        while end < n and starts[end] == starts[k]:
            end += 1
        rows[k:end] = sorted(rows[k:end], key=dur.__getitem__, reverse=True)
    return rows


def nest_reference(rows: list[int], ts: array, dur: array, parent: array) -> TrackNesting:
    """One track's nesting; writes its ops' parents into `parent`."""
    rows = order_ops(rows, ts, dur)
    starts = [ts[r] for r in rows]
    durs = [dur[r] for r in rows]
    ends_out = [s + d for s, d in zip(starts, durs)]
    # position n is a sentinel that holds every op (row -1, never ends), so the loop needs no test
    # for an empty stack
    n = len(rows)
    ends, own, up_rows = ends_out + [float("inf")], durs + [0.0], rows + [-1]
    stack = [n]  # positions of the open ops, innermost last
    push, pop = stack.append, stack.pop
    top = n
    for k, start, end, d in zip(count(), starts, ends_out, durs):
        while ends[top] <= start:
            pop()
            top = stack[-1]
        if ends[top] >= end:
            parent[rows[k]] = up_rows[top]
            own[top] -= d
        push(k)
        top = k
    del own[n]
    return rows, starts, ends_out, own


def add_self_times(times: dict[tuple, float], counts: dict[tuple, int], name_col: array, rows: list[int],
                   own: list[float], lines: list) -> None:
    """Add the ops' self times to `times[(name id, line key)]` (a line is an object with a `key`, or
    None: NO_LINE) and count them in `counts[(name id, line key)]`; the lists are aligned."""
    if _compiled_self_times is not None:
        _compiled_self_times(times, counts, name_col.tobytes(), rows, own, lines, NO_LINE)
        return
    add_self_times_reference(times, counts, name_col, rows, own, lines)


def add_self_times_reference(times: dict[tuple, float], counts: dict[tuple, int], name_col: array, rows: list[int],
                             own: list[float], lines: list) -> None:
    for nid, us, line in zip(map(name_col.__getitem__, rows), own, lines):
        if us < 0.0:
            us = 0.0
        key = (nid, line.key if line is not None else NO_LINE)
        times[key] = times.get(key, 0.0) + us
        counts[key] = counts.get(key, 0) + 1
