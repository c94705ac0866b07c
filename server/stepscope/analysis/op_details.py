"""What a line's ops carried, for `--shapes` / `--memory`, and lines from 1.9-era `Call stack` args.

Invariants:
- Pure functions over the columnar trace; nothing here changes a time figure of attribution.
- `shapes` of a line lists the outermost ops with recorded inputs it ran (an op nested in another
  such op of the same thread is the parent's implementation, not a call the line made), grouped by (op, input dims, input
  types), with calls per active step and the union of their time per active step; the top
  `MAX_SHAPES` by time. None when the trace recorded no shapes.
- `alloc_bytes` sums the allocations (`[memory]` events with bytes > 0) made on the line's own
  thread while it ran, per active step; `peak_bytes` is the highest allocated total of that device
  seen while the line ran (or the level it started at). Both are None when the trace holds no
  `[memory]` events: not recorded is never 0. Accelerator memory is used when the trace has any,
  else host memory; `memory_device` says which.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from typing import Hashable, Iterator

import orjson

from ..trace import Trace
from .intervals import union_length
from .labels import CallLines, FrameResolver

MAX_SHAPES = 5
_STEP_MARKER = re.compile(r"^ProfilerStep#\d+$")
US_PER_MS = 1000.0


def call_stack_nodes(trace: Trace, resolver: FrameResolver, w0: float, w1: float,
                     devices: set[int]) -> Iterator[tuple[float, float, int, tuple]]:
    """(start, end, track, ("call", path, line)) for each op in the window whose `Call stack`
    names a user-code statement. Step markers are left out: `prof.step()` opens the next step's
    marker, so its stack names that line for the whole step."""
    calls = CallLines(trace.names, resolver)
    markers = frozenset(i for i, n in enumerate(trace.names) if _STEP_MARKER.match(n))
    ts_col, dur_col, track_col, stack_col = trace.ts, trace.dur, trace.track, trace.stack
    for i in trace.rows_with(stack_col):
        start = ts_col[i]
        end = start + dur_col[i]
        if end < w0 or start > w1 or track_col[i] in devices or trace.name[i] in markers:
            continue
        key = calls.key(stack_col[i])
        if key is not None:
            yield start, end, track_col[i], key


def _outermost_ops(trace: Trace, w0: float, w1: float, tracks: set[int]) -> dict[int, list[int]]:
    """Per track, the ops with recorded inputs in the window not nested in another such op of that
    track, by start time (step markers, which older traces record as ops, are left out)."""
    markers = frozenset(i for i, n in enumerate(trace.names) if _STEP_MARKER.match(n))
    ts, dur, track_col, shapes, name = trace.ts, trace.dur, trace.track, trace.shapes, trace.name
    by_track: dict[int, list[int]] = defaultdict(list)
    for i in trace.rows_with(shapes):  # ops with recorded inputs
        # an op without recorded inputs (a record_function label) does not hide the ops inside it
        if track_col[i] in tracks and w0 <= ts[i] <= w1 and shapes[i] >= 0 and name[i] not in markers:
            by_track[track_col[i]].append(i)
    out: dict[int, list[int]] = {}
    for track, rows in by_track.items():
        rows.sort(key=lambda r: (ts[r], -dur[r]))
        top: list[int] = []
        open_end = float("-inf")
        for r in rows:
            start = ts[r]
            end = start + dur[r]
            if start >= open_end or end > open_end:  # after the open op, or overlapping it without nesting
                top.append(r)
                open_end = end
        out[track] = top
    return out


def _shape_text(text: str) -> tuple[list, list | None]:
    try:
        dims, types = orjson.loads(text)
    except (orjson.JSONDecodeError, ValueError, TypeError):
        return [], None
    return dims, types


def add_op_details(trace: Trace, lines: list[dict], nodes: list, w0: float, w1: float, n_steps: int) -> None:
    """Add `shapes`, `alloc_bytes`, `peak_bytes`, `memory_device` to each line dict (in place).

    `nodes` are attribution's nodes (`start`, `end`, `track`, `key` = (precision, path, line))."""
    if not lines:
        return
    per_key: dict[Hashable, list] = defaultdict(list)
    for n in nodes:
        per_key[n.key].append(n)
    has_shapes = trace.shapes.count(-1) < len(trace.shapes)
    memory = trace.memory
    mem_rows = _memory_rows(trace)
    top_ops = _outermost_ops(trace, w0, w1, {n.track for n in nodes}) if has_shapes else {}
    op_starts = {t: [trace.ts[r] for r in rows] for t, rows in top_ops.items()}
    mem_by_track: dict[int, list[int]] = defaultdict(list)
    for r in mem_rows:
        mem_by_track[memory.track[r]].append(r)
    mem_track_ts = {t: [memory.ts[r] for r in rows] for t, rows in mem_by_track.items()}
    mem_ts = [memory.ts[r] for r in mem_rows]
    device = None
    if mem_rows:
        device = "host" if memory.device_type[mem_rows[0]] == 0 else "accelerator"
    for line in lines:
        key_nodes = per_key.get((line["precision"], line["file"], line["line"]), [])
        line["shapes"] = _line_shapes(trace, key_nodes, top_ops, op_starts, n_steps) if has_shapes else None
        if not mem_rows:
            line["alloc_bytes"] = line["peak_bytes"] = line["memory_device"] = None
            continue
        allocated: set[int] = set()
        peak = -1
        for n in key_nodes:
            rows = mem_by_track.get(n.track)
            if rows:
                ts = mem_track_ts[n.track]
                allocated.update(rows[bisect.bisect_left(ts, n.start):bisect.bisect_right(ts, n.end)])
            lo, hi = bisect.bisect_left(mem_ts, n.start), bisect.bisect_right(mem_ts, n.end)
            for r in mem_rows[max(0, lo - 1):hi]:  # the level it started at, then every change inside
                peak = max(peak, memory.total_allocated[r])
        line["alloc_bytes"] = int(round(sum(max(0, memory.nbytes[r]) for r in allocated) / n_steps))
        line["peak_bytes"] = peak if peak >= 0 else None
        line["memory_device"] = device


def _memory_rows(trace: Trace) -> list[int]:
    """Memory events of one device family, by time: the accelerator's if any, else the host's."""
    memory = trace.memory
    rows = [r for r in range(len(memory)) if memory.device_type[r] not in (0, -1)]
    if not rows:
        rows = [r for r in range(len(memory)) if memory.device_type[r] in (0, -1)]
    rows.sort(key=memory.ts.__getitem__)
    return rows


def _line_shapes(trace: Trace, key_nodes: list, top_ops: dict[int, list[int]], op_starts: dict[int, list[float]],
                 n_steps: int) -> list[dict]:
    ts, dur, shapes_col, name_col = trace.ts, trace.dur, trace.shapes, trace.name
    ops: set[int] = set()
    for n in key_nodes:
        rows = top_ops.get(n.track)
        if rows:
            starts = op_starts[n.track]
            end = n.end
            ops.update(r for r in rows[bisect.bisect_left(starts, n.start):bisect.bisect_right(starts, end)]
                       if ts[r] + dur[r] <= end)
    groups: dict[tuple[int, int], list[int]] = defaultdict(list)
    for r in ops:
        if shapes_col[r] >= 0:
            groups[(name_col[r], shapes_col[r])].append(r)
    ranked = []
    for (name_id, shape_id), rows in groups.items():
        ms = round(union_length([(ts[r], ts[r] + dur[r]) for r in rows]) / US_PER_MS / n_steps, 4)
        ranked.append((ms, round(len(rows) / n_steps, 2), trace.names[name_id], shape_id))
    ranked.sort(key=lambda g: (-g[0], -g[1], g[2]))
    out = []
    for ms, calls, op, shape_id in ranked[:MAX_SHAPES]:  # only the groups shown have their JSON decoded
        dims, types = _shape_text(trace.names[shape_id])
        out.append({"op": op, "shapes": dims, "types": types, "calls": calls, "ms": ms})
    return out
