"""What a line ran, by name: the operators it called and the kernels it launched (the hover's lists).

    ops = outermost_ops(trace, w0, w1, devices)      # (track, start, row) of each outermost operator
    line["top_ops"] = named_work(trace, rows, n_steps, w0, w1)     # the rows attribution placed on the line
    line["top_kernels"] = named_work(trace, gpu_rows, n_steps, w0, w1, Kind.KERNEL)

Invariants:
- An operator counts for a line when it is *outermost* on its thread (no other operator holds it,
  nesting.py's parent) and its start lies in one of the line's nodes (attribution.py places it as
  it places a GPU launch: nested lines are inclusive, an operator on a thread without a line, such
  as autograd's, goes to the line the step's thread runs at that moment). An operator's children
  are its implementation, never listed beside it, so a line's entries never nest in each other.
- Per name: `calls` per active step, and `ms`, the union of those calls' intervals per active step
  (never a sum of overlapping events). The `MAX_NAMES` longest by `ms`, then by name, among the
  `CANDIDATES` names with the longest summed duration (the union is taken for those only: calls of
  one name on one thread or stream do not overlap, so there the two orders agree).
- Kernels are the GPU rows of kind kernel the line launched, by name, with the same figures
  (`calls` is launches per step). Names are cut to `MAX_NAME_CHARS` (kernel names run to kB).
"""

from __future__ import annotations

import heapq
from collections import defaultdict

from ..trace import Kind, Trace
from .intervals import union_length
from .nesting import nest_tracks

MAX_NAMES = 5
CANDIDATES = 3 * MAX_NAMES
MAX_NAME_CHARS = 200
US_PER_MS = 1000.0


def outermost_ops(trace: Trace, w0: float, w1: float, devices: set[int]) -> tuple[list[int], list[float], list[int]]:
    """(tracks, starts, rows) of the CPU operators of the window that no other operator holds."""
    ts, dur, track = trace.ts, trace.dur, trace.track
    by_track: dict[int, list[int]] = defaultdict(list)
    for r in trace.rows(Kind.CPU_OP):
        t = track[r]
        if t in devices:
            continue
        start = ts[r]
        if start + dur[r] < w0 or start > w1:
            continue
        by_track[t].append(r)
    if not by_track:
        return [], [], []
    nested = nest_tracks(by_track, ts, dur)
    parent = nested.parent
    tracks: list[int] = []
    starts: list[float] = []
    rows: list[int] = []
    for t, (ordered, op_starts, _, _) in nested.tracks.items():
        for r, start in zip(ordered, op_starts):
            if parent[r] == -1:
                tracks.append(t)
                starts.append(start)
                rows.append(r)
    return tracks, starts, rows


def named_work(trace: Trace, rows, n_steps: int, w0: float, w1: float, kind: int | None = None) -> list[dict]:
    """The rows grouped by name (of `kind` only, when given): the `MAX_NAMES` longest by union time
    inside the window [w0, w1]."""
    by_name: dict[int, list[int]] = defaultdict(list)
    kinds, names = trace.kind, trace.name
    for r in rows:
        if kind is None or kinds[r] == kind:
            by_name[names[r]].append(r)
    if not by_name:
        return []
    ts, dur = trace.ts, trace.dur
    summed = {nid: sum(map(dur.__getitem__, named)) for nid, named in by_name.items()}
    out = []
    for nid in heapq.nlargest(CANDIDATES, summed, key=summed.__getitem__):
        named = by_name[nid]
        spans = []
        for r in named:  # (max(w0, start), max(w0, min(w1, end))), choosing between equal values as they do
            start, end = ts[r], ts[r] + dur[r]
            end = end if end < w1 else w1
            spans.append((start if start > w0 else w0, end if end > w0 else w0))
        us = union_length(spans)
        out.append({
            "name": trace.names[nid][:MAX_NAME_CHARS],
            "calls": round(len(named) / n_steps, 2),
            "ms": round(us / US_PER_MS / n_steps, 4),
        })
    out.sort(key=lambda d: (-d["ms"], d["name"]))
    return out[:MAX_NAMES]
