"""How the operators of each thread nest: each one's enclosing operator and self time, in one pass.

    for track, (starts, ends, up, own) in nest_tracks(rows_by_track, trace.ts, trace.dur).items(): ...

Invariants:
- `rows` are one thread's operators sorted by (start, -duration) (the enclosing one first when two
  start together); the four lists are aligned with them.
- `ends[k] = starts[k] + dur`; `up[k]` is the row of the innermost operator still open at op k's
  start that also outlasts it (ends at or after its end), -1 for none; an op that outlasts its
  enclosing one (a partial overlap) has no parent but still holds the ops inside it.
- `own[k]` is op k's duration less the durations of the ops it directly holds, subtracted in row
  order (so the float result is the same on every path).
- The compiled kernel (`_nesting.c`) and the loop here give identical lists (tested); the loop is
  the reference, and what runs where the kernel is not built.
"""

from __future__ import annotations

from array import array
from itertools import count

try:
    from ._nesting import nest_rows as _compiled
except ImportError:  # not built here: the loop below gives the same lists
    _compiled = None


Nesting = tuple[list[float], list[float], list[int], list[float]]  # starts, ends, up, own


def nest_tracks(rows_by_track: dict[int, list[int]], ts: array, dur: array) -> dict[int, Nesting]:
    """Per track, the nesting of its operator rows (each list sorted as the invariants say)."""
    if _compiled is None:
        return {track: nest_reference(rows, ts, dur) for track, rows in rows_by_track.items()}
    ts_bytes, dur_bytes = ts.tobytes(), dur.tobytes()  # the kernel reads the columns as bytes
    return {track: _compiled(rows, ts_bytes, dur_bytes) for track, rows in rows_by_track.items()}


def nest_reference(rows: list[int], ts: array, dur: array) -> Nesting:
    starts = [ts[r] for r in rows]
    durs = [dur[r] for r in rows]
    ends_out = [s + d for s, d in zip(starts, durs)]
    # position n is a sentinel that holds every op (row -1, never ends), so the loop needs no test
    # for an empty stack
    n = len(rows)
    ends, own, up_rows = ends_out + [float("inf")], durs + [0.0], rows + [-1]
    up = [-1] * n
    stack = [n]  # positions of the open ops, innermost last
    push, pop = stack.append, stack.pop
    top = n
    for k, start, end, d in zip(count(), starts, ends_out, durs):
        while ends[top] <= start:
            pop()
            top = stack[-1]
        if ends[top] >= end:
            up[k] = up_rows[top]
            own[top] -= d
        push(k)
        top = k
    del own[n]
    return starts, ends_out, up, own
