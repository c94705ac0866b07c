"""Attribution: from events to source lines and regions, per active step.

How a figure reaches a line (docs/trace-engine.md has the long form):
- *Nodes* are occurrences of a line or region on a CPU thread: Stepscope's `ss:` regions (exact
  lines), user-code `python_function` frames (function precision: the def line), ops whose 1.9-era
  `Call stack` names a user statement (call precision, op_details.py), and every other
  `record_function` label (regions without a line). Shapes and memory per line: op_details.py.
- *Points* are moments on a thread that caused work: the launch call of each GPU event, each host
  synchronisation call, and the forward point of each backward op (its `fwdbwd` flow start, or the
  forward op with the same sequence number).
- A point belongs to every node of its own thread that contains it (nested lines are inclusive,
  like their wall time). A point on a thread with no containing node (an autograd or launcher
  thread) falls back to the nodes of the step's thread open at that moment. Where none is open and
  lines come from `Call stack` statements (1.9), it goes to the statement the step's thread ran last
  in the same step: that thread records no op while it waits (in `loss.backward()`, on the autograd
  thread's work), and every op it does run names its statement.
- A backward op's forward point is its `fwdbwd` flow start, else the latest forward op with the same
  sequence number that started before it (ops record the number the next autograd node will take,
  so the ops after one statement's last node carry the next statement's first number).

Invariants:
- Every time figure is a union of intervals divided by the number of active steps: nested or
  concurrent events never double count. Counts and bytes are per-step averages.
- `gpu_ms` / `backward_gpu_ms` are None when the trace holds no GPU events (never 0 for "unknown").
- Every union is clipped to the window (first step's start to last step's completion), so a
  per-step time never exceeds the mean step (window / steps).
- `cpu_self_ms` of a line is the union of the moments that belong to its nodes: on a thread, a moment
  belongs to the innermost node open then (the one that started last, also when two overlap without
  nesting). Never more than its wall time; on one thread the lines' self times add up to at most
  the window. `cpu_total_ms` sums each
  thread's union (CPU time, may exceed wall on several threads).
- A region's `own_ms` is its wall time without the lines and regions nested in it and without any
  backward op (ownership.py): never more than its wall time. With a file table, `time_split` says
  whose code the window's time runs in (your lines and their backward, a package's lines, torch's
  own regions, the rest), parts that add up to the window (ownership.split_time).
"""

from __future__ import annotations

import bisect
import heapq
import re
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import compress
from operator import itemgetter, not_
from pathlib import Path
from typing import Hashable, Iterable

from ..agent.protocol import parse_label
from ..trace import Kind, Trace
from .compiled_code import attribute_compiled, merge_lines, read_records
from .intervals import Interval, clip, union_length
from .labels import FileTable, FrameResolver, parse_frame
from .line_calls import call_figures
from .line_work import named_work, outermost_ops
from .links import Links, copy_direction
from .op_details import add_op_details, call_stack_nodes
from .ownership import own_time, region_role, split_time
from .steps import Step

_EVALUATE = "autograd::engine::evaluate_function: "
_BACKWARD = re.compile(rf"^({re.escape(_EVALUATE)}|[A-Za-z0-9_]+Backward\d*$)")
_STEP = re.compile(r"^ProfilerStep#\d+$")

US_PER_MS = 1000.0


@dataclass
class _Node:
    start: float
    end: float
    track: int
    key: Hashable


@dataclass
class Points:
    """Moments that caused work: (track, ts) with what they caused (a row of the trace)."""

    track: list[int] = field(default_factory=list)
    ts: list[float] = field(default_factory=list)
    row: list[int] = field(default_factory=list)

    def add(self, track: int, ts: float, row: int) -> None:
        self.track.append(track)
        self.ts.append(ts)
        self.row.append(row)


def _hits(nodes: list[_Node], points: Points, step_track: int | None,
          step_starts: list[float] | None = None) -> dict[Hashable, set[int]]:
    """For each node key, the indices of the points it contains (fallback: the step's thread, then
    the statement that thread ran last in the step when `step_starts` is given)."""
    by_track: dict[int, list[int]] = defaultdict(list)
    for i, t in enumerate(points.track):
        by_track[t].append(i)
    nodes_by_track: dict[int, list[_Node]] = defaultdict(list)
    for n in nodes:
        nodes_by_track[n.track].append(n)
    hits: dict[Hashable, set[int]] = defaultdict(set)
    matched = bytearray(len(points.ts))

    def run(track_nodes: list[_Node], idx: list[int]) -> None:
        idx = sorted(idx, key=points.ts.__getitem__)
        ts = [points.ts[i] for i in idx]
        for n in track_nodes:
            lo = bisect.bisect_left(ts, n.start)
            hi = bisect.bisect_right(ts, n.end)
            if lo < hi:
                chosen = idx[lo:hi]
                hits[n.key].update(chosen)
                for i in chosen:
                    matched[i] = 1

    for track, idx in by_track.items():
        if track in nodes_by_track:
            run(nodes_by_track[track], idx)
    if step_track is not None and step_track in nodes_by_track:
        leftover = [i for i in range(len(points.ts)) if not matched[i] and points.track[i] != step_track]
        if leftover:
            run(nodes_by_track[step_track], leftover)
        if leftover and step_starts:
            waiting = [i for i in leftover if not matched[i]]
            for i, key in _waiting_statements(nodes_by_track[step_track], points, waiting, step_starts):
                hits[key].add(i)
    return hits


def _waiting_statements(track_nodes: list[_Node], points: Points, idx: list[int],
                        step_starts: list[float]) -> list[tuple[int, Hashable]]:
    """(point, statement key) for points that no node holds: the `Call stack` statement whose last op
    on the step's thread ended last before the point, in the point's step."""
    last = LastStatement(((n.end, n.key) for n in track_nodes if isinstance(n.key, tuple) and n.key[0] == "call"),
                         step_starts)
    out = []
    for i in idx:
        key = last.at(points.ts[i])
        if key is not None:
            out.append((i, key))
    return out


class LastStatement:
    """The statement a thread ran last before a moment, in the moment's step.

    Built from (end, statement) of the ops of the step's thread whose `Call stack` names a statement.
    That thread records no op while it waits (in `loss.backward()`, on the autograd thread's work), and
    every op it does run names its statement, so the statement whose last op ended last before a moment
    is the one waiting then. A statement of an earlier step is never the answer."""

    def __init__(self, spans: Iterable[tuple[float, Hashable]], step_starts: list[float]):
        ordered = sorted(spans, key=itemgetter(0))  # stable: ties keep the order given
        self.ends = [end for end, _ in ordered]
        self.keys = [key for _, key in ordered]
        self.step_starts = step_starts

    def at(self, ts: float) -> Hashable | None:
        k = bisect.bisect_right(self.ends, ts) - 1
        step = bisect.bisect_right(self.step_starts, ts) - 1
        if k >= 0 and step >= 0 and self.ends[k] >= self.step_starts[step]:
            return self.keys[k]
        return None


def _self_intervals(nodes: list[_Node]) -> dict[Hashable, list[Interval]]:
    """Per key: the moments that belong to its nodes — on each thread, a moment belongs to the innermost
    node open then, the one that started last (for nodes that nest, the one nested deepest; for two
    that overlap without nesting, the later one). So a key's self time on several threads is their
    union (never more than its wall time), and on one thread the keys' self times partition the time
    its nodes cover (never more than the window)."""
    out: dict[Hashable, list[Interval]] = defaultdict(list)
    by_track: dict[int, list[_Node]] = defaultdict(list)
    for n in nodes:
        by_track[n.track].append(n)
    for track_nodes in by_track.values():
        track_nodes.sort(key=lambda n: (n.start, -n.end))  # position = opening order: later is innermost
        ends = sorted((n.end, k) for k, n in enumerate(track_nodes))
        open_heap: list[int] = []  # negated positions of the open nodes (a max-heap of the latest opened)
        closed = bytearray(len(track_nodes))
        at = None  # the moment the current owner's span started
        j = 0
        for k, n in enumerate(track_nodes):
            # close the nodes ending before this one starts, handing time to the latest still open
            while j < len(ends) and ends[j][0] <= n.start:
                at = _hand_over(out, track_nodes, open_heap, closed, at, ends[j])
                j += 1
            if open_heap and at is not None and n.start > at:
                out[track_nodes[-open_heap[0]].key].append((at, n.start))
            heapq.heappush(open_heap, -k)
            at = n.start
        while j < len(ends):
            at = _hand_over(out, track_nodes, open_heap, closed, at, ends[j])
            j += 1
    return out


def _hand_over(out: dict, nodes: list[_Node], open_heap: list[int], closed: bytearray, at: float | None,
               end: tuple[float, int]) -> float | None:
    """Node `end[1]` closes at `end[0]`: the time since `at` goes to the innermost open node; returns
    when the next owner's span starts."""
    t, k = end
    while open_heap and closed[-open_heap[0]]:
        heapq.heappop(open_heap)
    if open_heap and at is not None and t > at:
        out[nodes[-open_heap[0]].key].append((at, t))
    closed[k] = 1
    while open_heap and closed[-open_heap[0]]:
        heapq.heappop(open_heap)
    return t if open_heap else None


@dataclass
class Attribution:
    lines: list[dict]
    regions: list[dict]
    gpu_events: int
    gpu_unlinked: int
    backward_link: str  # "flows", "sequence numbers", "none needed" or "unavailable"
    ops_in_window: int = 0  # CPU operators recorded in the window (every thread)
    kernels_in_window: int = 0  # kernels launched in the window
    compiled: dict | None = None  # compiled graphs in the window (compiled_code.py), None without any
    compiled_notes: list[str] = field(default_factory=list)
    gpu_launched_before: int = 0  # of gpu_unlinked: launched before the trace's first launch call (links.py)
    time_split: dict | None = None  # whose code the window's time runs in (ownership.split_time); None: no file table


def attribute(
    trace: Trace,
    links: Links,
    steps: list[Step],
    *,
    file_table: FileTable | None,
    source_root: Path | None,
    compile_doc: dict | None = None,
) -> Attribution:
    n_steps = len(steps)
    w0, w1 = steps[0].cpu_start, steps[-1].completion
    step_track = links.main_track
    gpu_observed = bool(links.gpu_rows)
    devices = links.device_tracks
    frames = FrameResolver(source_root or (file_table.root if file_table else None), file_table)

    # --- nodes: regions (every label), exact lines (ss labels), function lines (user frames)
    region_nodes: list[_Node] = []
    line_nodes: list[_Node] = []
    frame_nodes: list[_Node] = []
    region_info: dict[str, tuple[str | None, int | None]] = {}
    frame_cache: dict[int, tuple | None] = {}
    ss_cache: dict[int, tuple | None] = {}
    # resolve each distinct name once; only rows whose name leads somewhere are visited
    for name_id in set(map(trace.name.__getitem__, trace.rows(Kind.PYTHON))):
        frame = parse_frame(trace.names[name_id])
        path = frames.resolve(frame) if frame else None
        frame_cache[name_id] = ("function", path, frame.line) if (frame and path) else None
    frame_names = frozenset(n for n, key in frame_cache.items() if key is not None)
    ts_col, dur_col, track_col, name_col = trace.ts, trace.dur, trace.track, trace.name
    for i in trace.rows(Kind.ANNOTATION):
        start = ts_col[i]
        end = start + dur_col[i]
        if end < w0 or start > w1 or track_col[i] in devices:
            continue
        track, name_id = track_col[i], name_col[i]
        label = trace.names[name_id]
        if _STEP.match(label):
            continue
        region_nodes.append(_Node(start, end, track, label))
        if name_id not in ss_cache:
            ss = parse_label(label)
            path = file_table.resolve(ss.file_id) if (ss and file_table) else None
            ss_cache[name_id] = ("exact", path, ss.line) if (ss and path) else None
            region_info[label] = (path, ss.line if ss else None)
        key = ss_cache[name_id]
        if key is not None:
            line_nodes.append(_Node(start, end, track, key))
    if frame_names:
        for i in trace.rows_named(frame_names):
            if trace.kind[i] != Kind.PYTHON:
                continue
            start = ts_col[i]
            end = start + dur_col[i]
            if end < w0 or start > w1 or track_col[i] in devices:
                continue
            frame_nodes.append(_Node(start, end, track_col[i], frame_cache[name_col[i]]))
    # 1.9-era `Call stack` args: the calling statement of each op ("call" precision)
    frame_nodes.extend(_Node(*n) for n in call_stack_nodes(trace, frames, w0, w1, devices))

    # --- points: GPU launches, host syncs, forward points of backward ops
    launch_row = links.launch_row
    launched = [(g, r) for g in links.gpu_rows if (r := launch_row.get(g)) is not None and w0 <= ts_col[r] <= w1]
    gpu_points = Points([track_col[r] for _, r in launched], [ts_col[r] for _, r in launched],
                         [g for g, _ in launched])
    syncs = [r for r in links.sync_rows if w0 <= ts_col[r] <= w1]
    sync_points = Points([track_col[r] for r in syncs], [ts_col[r] for r in syncs], syncs)
    op_rows = [r for r in trace.rows(Kind.CPU_OP) if w0 <= ts_col[r] <= w1 and track_col[r] not in devices]
    op_points = Points([track_col[r] for r in op_rows], [ts_col[r] for r in op_rows], op_rows)
    bwd_points, backward_link = backward_points(trace, w0, w1)
    gpu_under = gpu_under_backward(trace, bwd_points, gpu_points)
    named_op_points = Points(*outermost_ops(trace, w0, w1, devices))  # what each line called, by name

    step_starts = [s.cpu_start for s in steps]

    def figures(nodes: list[_Node], named: bool = False) -> dict[Hashable, dict]:
        gpu_hits = _hits(nodes, gpu_points, step_track, step_starts)
        named_op_hits = _hits(nodes, named_op_points, step_track, step_starts) if named else {}
        sync_hits = _hits(nodes, sync_points, step_track, step_starts)
        op_hits = _hits(nodes, op_points, None)  # the operators the line's own thread ran inside it
        bwd_hits = _hits(nodes, bwd_points, None)  # forward points are on the forward thread
        self_intervals = _self_intervals(nodes)
        per_key: dict[Hashable, list[_Node]] = defaultdict(list)
        for n in nodes:
            per_key[n.key].append(n)
        out = {}
        for key, key_nodes in per_key.items():
            by_track: dict[int, list[Interval]] = defaultdict(list)
            for n in key_nodes:
                by_track[n.track].append((n.start, n.end))
            all_iv = clip([iv for ivs in by_track.values() for iv in ivs], w0, w1)
            wall = union_length(all_iv)
            cpu_total = sum(union_length(clip(ivs, w0, w1)) for ivs in by_track.values())
            fig = {
                **call_figures([min(n.end, w1) - max(n.start, w0) for n in key_nodes], n_steps),
                "wall_ms": _ms(wall, n_steps),
                "cpu_self_ms": _ms(union_length(clip(self_intervals[key], w0, w1)), n_steps),
                "cpu_total_ms": _ms(cpu_total, n_steps),
                "count": _per_step(len(key_nodes), n_steps),
                "ops": _per_step(len(op_hits.get(key, ())), n_steps),
            }
            fig.update(_gpu_figures(trace, [gpu_points.row[i] for i in gpu_hits.get(key, ())], n_steps, gpu_observed,
                                    w0, w1))
            sync_rows = [sync_points.row[i] for i in sync_hits.get(key, ())]
            fig["sync_ms"] = _ms(_window_union(trace, sync_rows, w0, w1), n_steps)
            bwd_rows = [bwd_points.row[i] for i in bwd_hits.get(key, ())]
            if backward_link == "unavailable":
                fig["backward_ms"] = None
            else:
                fig["backward_ms"] = _ms(_window_union(trace, bwd_rows, w0, w1), n_steps)
            fig["backward_gpu_ms"] = _backward_gpu_ms(trace, set(bwd_rows), gpu_under, n_steps, gpu_observed, w0, w1)
            if named:
                fig["top_ops"] = named_work(trace, (named_op_points.row[i] for i in named_op_hits.get(key, ())),
                                            n_steps, w0, w1)
                fig["top_kernels"] = named_work(trace, (gpu_points.row[i] for i in gpu_hits.get(key, ())), n_steps,
                                                w0, w1, Kind.KERNEL) if gpu_observed else None
            out[key] = fig
        return out

    lines: list[dict] = []
    exact = figures(line_nodes, named=True)
    for (precision, path, line), fig in exact.items():
        lines.append({"file": path, "line": line, "precision": precision, **fig})
    exact_keys = {(path, line) for (_, path, line) in exact}
    for (precision, path, line), fig in figures(frame_nodes, named=True).items():
        if (path, line) in exact_keys:
            continue  # an exact figure for the same line wins over the function-level one
        lines.append({"file": path, "line": line, "precision": precision, **fig})
    add_op_details(trace, lines, line_nodes + frame_nodes, w0, w1, n_steps)  # shapes, memory
    # compiled graphs' kernels on the lines Inductor's records name (compiled_code.py)
    records = read_records(compile_doc, frames) if compile_doc is not None else None
    compiled = attribute_compiled(trace, links, steps, records, compile_doc_present=compile_doc is not None)
    lines = merge_lines(lines, compiled.lines)
    lines.sort(key=lambda d: (-d["wall_ms"], d["file"], d["line"]))

    backward_spans = [(ts_col[r], ts_col[r] + dur_col[r], track_col[r]) for r in backward_rows(trace, w0, w1)]
    own = own_time(region_nodes, backward_spans, w0, w1, step_track)
    regions: list[dict] = []
    for label, fig in figures(region_nodes).items():
        path, line = region_info.get(label, (None, None))
        regions.append({
            "label": label,
            "file": path,
            "line": line,
            "wall_ms": fig["wall_ms"],
            "gpu_ms": fig["gpu_ms"],
            "cpu_total_ms": fig["cpu_total_ms"],
            "kernels": fig["kernels"],
            "count": fig["count"],
            "own_ms": min(fig["wall_ms"], _ms(union_length(own.get(label, [])), n_steps)),
        })
    regions.sort(key=lambda d: (-d["wall_ms"], d["label"]))
    kernels = sum(1 for g, _ in launched if trace.kind[g] == Kind.KERNEL)
    split = None
    if file_table is not None:
        packages = file_table.package_files()
        user_nodes = [n for n in line_nodes + frame_nodes if n.key[1] not in packages]
        user_backward = {bwd_points.row[i] for hit in _hits(user_nodes, bwd_points, None).values() for i in hit}
        user = [(n.start, n.end) for n in user_nodes] + [(ts_col[r], ts_col[r] + dur_col[r]) for r in user_backward]

        def owner_of(label: Hashable) -> tuple[str, str] | None:
            path = region_info.get(str(label), (None, None))[0]
            if path is not None:
                return ("package", packages[path]) if path in packages else None
            role = region_role(str(label))
            return ("torch", role) if role else None

        # on the step's thread, each moment is the innermost region's, backward included: a package
        # line's backward is its package's; the user's backward is already theirs
        main_own = own_time([n for n in region_nodes if n.track == step_track], [], w0, w1) \
            if step_track is not None else {}
        split = split_time(user=user, main_own=main_own, owner_of=owner_of, w0=w0, w1=w1, n_steps=n_steps)
    return Attribution(lines, regions, len(links.gpu_rows), links.unlinked, backward_link, len(op_rows), kernels,
                       compiled.summary, compiled.notes, links.launched_before, split)


def _ms(us: float, n_steps: int) -> float:
    return round(us / US_PER_MS / n_steps, 4)


def _window_union(trace: Trace, rows: Iterable[int], w0: float, w1: float) -> float:
    """Time (µs) covered by the events `rows` inside the window: no figure holds time outside it."""
    ts, dur = trace.ts, trace.dur
    return union_length(clip([(ts[r], ts[r] + dur[r]) for r in rows], w0, w1))


def _per_step(count: int, n_steps: int) -> int:
    return int(round(count / n_steps))


def _gpu_figures(trace: Trace, rows: list[int], n_steps: int, observed: bool, w0: float, w1: float) -> dict:
    copies = {d: {"count": 0, "bytes": 0} for d in ("h2d", "d2h", "d2d")}
    kernels = 0
    ts, dur, kind = trace.ts, trace.dur, trace.kind
    intervals: list[Interval] = [(ts[r], ts[r] + dur[r]) for r in rows]
    kernel, memcpy = Kind.KERNEL, Kind.MEMCPY
    for r in rows:
        k = kind[r]
        if k == kernel:
            kernels += 1
        elif k == memcpy:
            direction = copy_direction(trace, r)
            if direction in copies:
                copies[direction]["count"] += 1
                copies[direction]["bytes"] += max(0, trace.nbytes[r])
    for c in copies.values():
        c["count"] = _per_step(c["count"], n_steps)
        c["bytes"] = _per_step(c["bytes"], n_steps)
    return {
        "gpu_ms": _ms(union_length(clip(intervals, w0, w1)), n_steps) if observed else None,
        "kernels": _per_step(kernels, n_steps),
        "copies": copies,
    }


def gpu_under_backward(trace: Trace, backward_points: Points, gpu_points: Points) -> dict[int, list[int]]:
    """For each backward op, the GPU events launched from inside it (same thread, by launch time)."""
    ts_col, dur_col = trace.ts, trace.dur
    by_track: dict[int, list[int]] = defaultdict(list)
    for r in set(backward_points.row):
        by_track[trace.track[r]].append(r)
    starts: dict[int, list[float]] = {}
    for track, rows in by_track.items():
        rows.sort(key=trace.ts.__getitem__)
        starts[track] = [trace.ts[r] for r in rows]
    out: dict[int, list[int]] = defaultdict(list)
    for track, ts, row in zip(gpu_points.track, gpu_points.ts, gpu_points.row):
        rows = by_track.get(track)
        if not rows:
            continue
        j = bisect.bisect_right(starts[track], ts) - 1
        # backward ops of one thread run one after another; look back a little for an enclosing one
        for r in reversed(rows[max(0, j - 8) : j + 1]):
            if ts_col[r] + dur_col[r] >= ts:
                out[r].append(row)
                break
    return out


def _backward_gpu_ms(trace: Trace, bwd_rows: list[int], gpu_under: dict[int, list[int]], n_steps: int,
                     observed: bool, w0: float, w1: float) -> float | None:
    """GPU time of the events launched from inside the given backward ops (union, in the window)."""
    if not observed:
        return None
    return _ms(_window_union(trace, (g for r in bwd_rows for g in gpu_under.get(r, ())), w0, w1), n_steps)


def backward_rows(trace: Trace, w0: float, w1: float) -> list[int]:
    """The backward ops (autograd's, by name) that start in the window, on any thread."""
    backward_ids = frozenset(i for i, n in enumerate(trace.names) if _BACKWARD.match(n))
    return [i for i in trace.rows_named(backward_ids) if trace.kind[i] == Kind.CPU_OP and w0 <= trace.ts[i] <= w1]


def backward_points(trace: Trace, w0: float, w1: float) -> tuple[Points, str]:
    """Forward points of the backward ops in the window, and how they were linked."""
    ts_col, dur_col, name_col = trace.ts, trace.dur, trace.name
    points = Points()
    bwd_rows_by_track: dict[int, list[int]] = defaultdict(list)
    backward_ids = frozenset(i for i, n in enumerate(trace.names) if _BACKWARD.match(n))
    evaluate_ids = frozenset(i for i in backward_ids if trace.names[i].startswith(_EVALUATE))
    for i in trace.rows_named(backward_ids):
        if trace.kind[i] == Kind.CPU_OP and w0 <= trace.ts[i] <= w1:
            bwd_rows_by_track[trace.track[i]].append(i)
    if not bwd_rows_by_track:
        return points, "none needed"
    flows = trace.flows
    if len(flows):
        # flow id -> (track, ts) of its start and of its end (the last point of each wins)
        is_start = list(map(not_, flows.is_end))
        starts: dict[int, tuple[int, float]] = dict(zip(compress(flows.id, is_start),
                                                        zip(compress(flows.track, is_start), compress(flows.ts, is_start))))
        ends: dict[int, tuple[int, float]] = dict(zip(compress(flows.id, flows.is_end),
                                                      zip(compress(flows.track, flows.is_end), compress(flows.ts, flows.is_end))))
        for track in bwd_rows_by_track:
            bwd_rows_by_track[track].sort(key=trace.ts.__getitem__)
        bwd_starts = {t: [trace.ts[r] for r in rows] for t, rows in bwd_rows_by_track.items()}
        add = points.add
        for fid, (etrack, ets) in ends.items():
            start = starts.get(fid)
            rows = bwd_rows_by_track.get(etrack)
            if start is None or not rows:
                continue
            # the innermost backward op on the end thread that contains the flow's end, and the engine's
            # `evaluate_function` around it: the same node, whose evaluation also adds its gradients into the
            # next nodes' inputs (a per-sample loop's accumulations), as sequence numbers link it too. The
            # engine calls the node's op first thing, so its wrapper is the backward op just before it.
            j = bisect.bisect_right(bwd_starts[etrack], ets) - 1
            for k in range(j, max(-1, j - 65), -1):
                r = rows[k]
                if ts_col[r] + dur_col[r] >= ets:
                    add(start[0], start[1], r)
                    wrapper = rows[k - 1] if k > 0 else -1
                    if wrapper >= 0 and name_col[wrapper] in evaluate_ids and ts_col[wrapper] + dur_col[wrapper] >= ets:
                        add(start[0], start[1], wrapper)
                    break
        return points, "flows"
    # no flows: match backward ops to forward ops by sequence number
    forward_by_seq: dict[int, list[tuple[float, int]]] = defaultdict(list)  # number -> [(start, row)]
    for i in compress(range(len(trace.sequence)), map((-1).__lt__, trace.sequence)):
        if trace.kind[i] == Kind.CPU_OP and trace.name[i] not in backward_ids:
            forward_by_seq[trace.sequence[i]].append((trace.ts[i], i))
    for holders in forward_by_seq.values():
        holders.sort()
    linked = False
    for rows in bwd_rows_by_track.values():
        for r in rows:
            holders = forward_by_seq.get(trace.sequence[r], ())
            # the latest holder before the backward op: earlier ones ran before the node was made (the
            # end of the previous statement, or of the previous step)
            k = bisect.bisect_right(holders, (trace.ts[r], len(trace))) - 1
            if k < 0:
                continue
            f = holders[k][1]
            points.add(trace.track[f], trace.ts[f], r)
            linked = True
    return points, "sequence numbers" if linked else "unavailable"
