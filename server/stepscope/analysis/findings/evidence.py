"""Evidence for the findings: the few trace facts they need, computed once when the report is built.

The report's `evidence` is a JSON-ready dict: batch reads, operators, kernels, host-to-device
copies, host synchronisations, names that appear only after the first active step, and the host's
own work (host_work.py, which also places backward work on the forward line that recorded it).
`find(report)` then stays a pure function of the report.

It is computed in two halves that share one read-only `evidence_window` (the window, the line
nodes, the moments): `operator_evidence` (the operator tree and every operator's line: most of the
work) and `moment_evidence` (the rest), joined by `merge_evidence`; report.py computes the first in
a child process when the trace is large.

Invariants:
- Every time figure is a union of intervals divided by the number of active steps (nested or
  concurrent events never double count); counts are per-step averages.
- GPU figures are None when the trace holds no GPU events, never 0 for "unknown".
- A moment is placed on a line by the innermost line node open on its thread at that moment:
  Stepscope's `ss:` regions (exact), else user-code `python_function` frames (function precision);
  a moment on a thread with no node falls back to the node open on the main thread (the step
  markers' thread, else the longest-running CPU thread: links.py).
- A moment no such node holds goes to the statement a 1.9-era `Call stack` names (call precision,
  as attribution does): that of the innermost op holding it with a user frame in its stack; on
  another thread without one (the autograd thread records no stack), that of the main thread's op
  open then, else the statement the main thread ran last in the same step (`_CallPlaces`).
- Host moments count from the first step's host start to the last step's host end; for steps read
  from GPU-stream markers, whose host span was not recorded, to the last step's completion (a wait
  on the GPU after the step's last launch belongs to the step).
- Names that match the batch-read patterns mark the batch read; operators inside a batch read are
  left out of the operator figures (that time is the input pipeline's, reported by input-bound).
"""

from __future__ import annotations

import bisect
import fnmatch
import re
from array import array
from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import chain, compress, repeat
from operator import is_
from pathlib import Path
from statistics import median
from typing import Iterable

from ...agent.protocol import parse_label
from ...trace import Kind, Trace
from ..intervals import Interval, clip, length, merge
from ..attribution import LastStatement
from ..labels import CallLines, FileTable, FrameResolver, parse_frame
from ..links import Links, copy_direction, wait_kind, wait_words
from ..nesting import Nested, add_self_times, nest_tracks
from ..op_roles import op_role
from ..steps import Step
from .host_work import backward_op_causes, host_work, launch_causes

#: ops that build a tensor from nothing but their arguments (deterministic values: a constant)
FACTORY_OPS = frozenset({
    "aten::arange", "aten::tensor", "aten::scalar_tensor", "aten::full", "aten::ones", "aten::zeros",
    "aten::linspace", "aten::logspace", "aten::eye", "aten::lift_fresh", "aten::full_like", "aten::ones_like",
    "aten::zeros_like", "aten::from_file",
})
_LAUNCH = re.compile(r"(LaunchKernel|LaunchCooperativeKernel|ModuleLaunchKernel|GraphLaunch)", re.IGNORECASE)
_STEP = re.compile(r"^ProfilerStep#\d+$")
_GRAPH_LAUNCH = re.compile(r"GraphLaunch", re.IGNORECASE)
# what a replayed kernel's name says of its part of the step (a graph's work has no host-side op)
_BACKWARD_KERNEL = re.compile(r"backward|_bwd|Backward|wgrad|dgrad")
_OPTIMIZER_KERNEL = re.compile(r"multi_tensor_apply|fused_adam|FusedAdam|_adam|_sgd|lamb_", re.IGNORECASE)
US_PER_MS = 1000.0


@dataclass
class _Node:
    start: float
    end: float
    key: tuple  # (precision, file, line)
    uid: int  # identity of this occurrence


class _Locator:
    """The innermost node open at (track, ts); see the module's invariants.

    Nodes are kept per track as parallel lists sorted by (start, -end); a node is any object
    (a `_Node`, or a row number), returned as given."""

    def __init__(self, nodes_by_track: dict[int, list], step_track: int | None,
                 span=lambda n: (n.start, n.end)):
        self.tracks: dict[int, tuple[list[float], list[float], list]] = {}
        for track, nodes in nodes_by_track.items():
            spans = [(*span(n), i) for i, n in enumerate(nodes)]
            spans.sort(key=lambda s: (s[0], -s[1]))
            self.tracks[track] = ([s[0] for s in spans], [s[1] for s in spans], [nodes[s[2]] for s in spans])
        self.step_track = step_track

    def locate_sorted(self, track: int, times: list[float]) -> list:
        """`locate` for many moments of one track, given in time order (no grouping, no sorting)."""
        out = _sweep_sorted(self.tracks[track], times) if track in self.tracks else [None] * len(times)
        if self.step_track is not None and track != self.step_track and self.step_track in self.tracks:
            left = [i for i, node in enumerate(out) if node is None]
            for i, node in zip(left, _sweep_sorted(self.tracks[self.step_track], [times[i] for i in left])):
                out[i] = node
        return out

    def locate(self, queries: list[tuple[int, float]]) -> list:
        out: list = [None] * len(queries)
        by_track: dict[int, list[int]] = defaultdict(list)
        for i, (track, _) in enumerate(queries):
            by_track[track].append(i)
        for track, idx in by_track.items():
            if track in self.tracks:
                _sweep(self.tracks[track], idx, queries, out)
        if self.step_track is not None and self.step_track in self.tracks:
            left = [i for i, (track, _) in enumerate(queries) if out[i] is None and track != self.step_track]
            _sweep(self.tracks[self.step_track], left, queries, out)
        return out


def _sweep_sorted(track_nodes: tuple[list[float], list[float], list], times: list[float]) -> list:
    """`_sweep` for times already in order: the innermost node containing each, or None."""
    starts, ends, nodes = track_nodes
    out: list = [None] * len(times)
    stack: list[int] = []
    j, n = 0, len(nodes)
    for i, ts in enumerate(times):
        while j < n and starts[j] <= ts:
            while stack and ends[stack[-1]] < starts[j]:
                stack.pop()
            stack.append(j)
            j += 1
        while stack and ends[stack[-1]] < ts:
            stack.pop()
        if stack:
            out[i] = nodes[stack[-1]]
    return out


def _sweep(track_nodes: tuple[list[float], list[float], list], idx: list[int],
           queries: list[tuple[int, float]], out: list) -> None:
    """For each query `idx` names, the innermost node containing it; nodes sorted by (start, -end)."""
    if not track_nodes[2] or not idx:
        return
    idx = sorted(idx, key=lambda i: queries[i][1])
    for i, node in zip(idx, _sweep_sorted(track_nodes, [queries[i][1] for i in idx])):
        if node is not None:
            out[i] = node


class _CallPlaces:
    """Lines of moments from 1.9-era `Call stack` args (see the module's invariants), precision "call".

    One node per statement: two moments of one statement get the same object, which is what "the
    same line occurrence" means for call lines (a stack names a statement, not one execution of it)."""

    def __init__(self, trace: Trace, lines: CallLines, op_spans: dict[int, tuple[list, list, list[int]]],
                 parent: array, main_track: int | None, step_starts: list[float]):
        self.trace, self.lines, self.op_spans, self.parent = trace, lines, op_spans, parent
        self.main_track = main_track
        self.step_starts = step_starts
        self.nodes: dict[tuple, _Node] = {}  # statement key -> its node
        self._by_stack: dict[int, _Node | None] = {-1: None}  # stack id -> its statement's node
        self._last: LastStatement | None = None

    def node(self, key: tuple) -> _Node:
        """The one node of a statement."""
        found = self.nodes.get(key)
        if found is None:
            found = self.nodes[key] = _Node(0.0, 0.0, key, 0)
        return found

    def of_op(self, row: int | None) -> _Node | None:
        """The statement of the innermost op from `row` outwards whose stack names one."""
        stack, parent, by_stack = self.trace.stack, self.parent, self._by_stack
        while row is not None and row >= 0:
            sid = stack[row]
            found = by_stack[sid] if sid in by_stack else self._own([row])[0]
            if found is not None:
                return found
            row = parent[row]
        return None

    def _own(self, rows: list[int]) -> list[_Node | None]:
        """The statement each op's own stack names (None without one); each distinct stack resolved once."""
        by_stack = self._by_stack
        sids = list(map(self.trace.stack.__getitem__, rows))
        for sid in set(sids).difference(by_stack):
            key = self.lines.key(sid)
            by_stack[sid] = self.node(key) if key is not None else None
        return list(map(by_stack.__getitem__, sids))

    def of_track_ops(self, rows: list[int]) -> list[_Node | None]:
        """`of_op` of every op of one track, given parents first (by start, then longest first, as
        `op_spans` holds them): each op's own stack, else its parent's answer, in one pass."""
        out = self._own(rows)
        missing = [k for k, node in enumerate(out) if node is None]
        if missing:
            found_at = dict(zip(rows, out))
            parent = self.parent
            for k in missing:
                up = parent[rows[k]]
                if up >= 0:
                    out[k] = found_at[rows[k]] = found_at.get(up)
        return out

    def fill(self, tracks: list[int], times: list[float], own: list, located: list) -> None:
        """Place, in `located`, every moment (track, time) that no region or frame node holds: the
        statement of its own op chain (`own`, or None), else the main thread's (for another thread)."""
        todo = list(compress(range(len(located)), map(is_, located, repeat(None))))
        for i in todo:
            located[i] = own[i]
        main = self.main_track
        if main is None:
            return
        elsewhere = [i for i in todo if own[i] is None and tracks[i] != main]
        if not elsewhere:
            return
        # the main thread's op open then, else the statement it ran last in the step (it records
        # no op while it waits)
        main_ops = _innermost_ops(self.trace, self.op_spans, self.parent, [(main, times[i]) for i in elsewhere])
        last = self._waiting()
        for i, op in zip(elsewhere, main_ops):
            located[i] = self.of_op(op) or last.at(times[i])

    def fill_moments(self, queries: list[tuple[int, float]], ops: list, located: list) -> None:
        """`fill` for moments given as (track, ts) with the innermost op holding each (or None)."""
        own = [self.of_op(op) if node is None else None for op, node in zip(ops, located)]
        self.fill([q[0] for q in queries], [q[1] for q in queries], own, located)

    def place(self, track: int, ts: float, op: int | None) -> _Node | None:
        """The statement of one moment on `track` at `ts` whose innermost op is `op` (or None)."""
        located = [None]
        self.fill_moments([(track, ts)], [op], located)
        return located[0]

    def _waiting(self) -> LastStatement:
        """The main thread's statements (their nodes) by the end of their ops (built on first use)."""
        if self._last is None:
            _, ends, rows = self.op_spans.get(self.main_track, ([], [], []))
            spans = [(end, node) for end, node in zip(ends, self._own(rows)) if node is not None]
            self._last = LastStatement(spans, self.step_starts)
        return self._last


def _innermost_ops(trace: Trace, op_spans: dict[int, tuple[list[float], list[float], list[int]]],
                   parent: array, queries: list[tuple[int, float]]) -> list[int | None]:
    """The innermost operator open at each (track, ts), or None. The operator that started last
    before the moment contains it, or one of its ancestors does (operators on a thread nest), so
    a bisection and a short walk up the parents replace a sweep over every operator."""
    out: list[int | None] = []
    start_col, dur_col = trace.ts, trace.dur
    for track, ts in queries:
        spans = op_spans.get(track)
        k = bisect.bisect_right(spans[0], ts) - 1 if spans else -1
        row = spans[2][k] if k >= 0 else -1
        while row >= 0 and start_col[row] + dur_col[row] < ts:
            row = parent[row]
        out.append(row if row >= 0 else None)
    return out


def _overlap(a: list[Interval], b: list[Interval]) -> float:
    """Time covered by both of two merged interval lists."""
    i = j = 0
    total = 0.0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def _ms(us: float, n: int) -> float:
    return round(us / US_PER_MS / n, 4)


def _where(node: _Node | None) -> dict:
    if node is None:
        return {"file": None, "line": None, "precision": None}
    precision, path, line = node.key
    return {"file": path, "line": line, "precision": precision}


def _matcher(patterns: Iterable[str]):
    """One case-insensitive regex for all the shell-style patterns (names are matched whole)."""
    patterns = list(patterns)
    if not patterns:
        return lambda name: False
    compiled = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns), re.IGNORECASE | re.DOTALL)
    return lambda name: compiled.match(name) is not None


EVIDENCE_KEYS = ("source", "line_precision", "call_stacks", "step_mean_ms", "batch_read", "ops", "kernels",
                 "h2d_copies", "syncs", "new_names", "phases", "host_work")
#: operators and labels that show the step trains: an autograd node's backward, an optimizer's step
BACKWARD_NAME = re.compile(r"^(autograd::engine::evaluate_function: |[A-Za-z0-9_]+Backward\d*$)")
OPTIMIZER_NAME = re.compile(r"^(Optimizer\.step#|aten::_fused_(adam|adamw|sgd|adagrad)_?$)")


def merge_evidence(*halves: dict) -> dict:
    """The halves as one `evidence` dict, keys in the report's order."""
    merged = {k: v for half in halves for k, v in half.items()}
    return {k: merged[k] for k in EVIDENCE_KEYS}


@dataclass
class EvidenceWindow:
    """What both halves of the evidence start from: the active window, the line nodes that place
    moments on lines, the batch reads, and the moments that caused GPU work or waited on it."""

    n: int
    w0: float
    w1: float
    cpu_end: float  # the host span's end (see the module's invariants)
    step_starts: list[float]
    frames: FrameResolver
    locator: _Locator
    line_precision: str  # of the line nodes: "exact", "function" or "none" (before call lines)
    saw_ss: bool
    batch_merged: list[Interval]
    batch_signals: Counter
    batch_line: _Node | None
    batch_first: tuple[int, float, int] | None  # (track, start, row) of the earliest batch read
    gpu_busy: list[Interval]
    in_window_gpu: list[int]
    launches: list[tuple[int, int]]  # (gpu row, launch row)
    launch_q: list[tuple[int, float]]
    launch_lines: list
    sync_rows: list[int]
    sync_q: list[tuple[int, float]]
    sync_lines: list
    has_stacks: bool
    ops_by_track: dict[int, list[int]]  # operators in the window by thread, in file order

    def step_of(self, ts: float) -> int:
        return max(0, bisect.bisect_right(self.step_starts, ts) - 1)


@dataclass
class _Operators:
    """The operator tree of the window's threads, the op holding each launch, and with `Call stack`
    args the call lines (which also place the launches and syncs no region or frame holds)."""

    parent: array  # row -> the enclosing op's row (-1 at top level, and for rows that are no op)
    own_us: dict[int, list[float]]  # track -> self time of each op, aligned with op_spans' rows
    op_spans: dict[int, tuple[list[float], list[float], list[int]]]  # track -> (starts, ends, rows), ordered
    launch_ops: list[int | None]
    calls: _CallPlaces | None
    launch_lines: list  # the window's, completed by the call lines (a copy: the window is shared)
    sync_lines: list


def evidence_window(trace: Trace, links: Links, steps: list[Step], *, file_table: FileTable | None,
                    source_root: Path | None, batch_read_patterns: Iterable[str]) -> EvidenceWindow:
    """What both halves of the evidence read; neither half changes it."""
    n = len(steps)
    w0, w1 = steps[0].cpu_start, steps[-1].completion
    # steps from GPU-stream markers: the last launch only bounds the host span from below
    cpu_end = w1 if steps[-1].from_gpu_markers else steps[-1].cpu_end
    devices = links.device_tracks
    names = trace.names
    ts_col, dur_col, track_col, name_col, kind_col = trace.ts, trace.dur, trace.track, trace.name, trace.kind

    # --- line nodes: ss regions (exact) and user frames (function); batch-read intervals
    is_batch = _matcher(batch_read_patterns)
    frames = FrameResolver(source_root or (file_table.root if file_table else None), file_table)
    ss_nodes: dict[int, list[_Node]] = defaultdict(list)
    frame_nodes: dict[int, list[_Node]] = defaultdict(list)
    name_key: dict[int, tuple | None] = {}
    batch_names: dict[int, bool] = {}
    batch_iv: list[Interval] = []
    batch_signals: Counter = Counter()  # name -> occurrences, in the order of the time each holds
    reads: dict[int, list[tuple[int, float, float, int, _Node | None]]] = {}  # name id -> (track, start, end, row, node)
    uid = 0
    batch_line: _Node | None = None
    batch_first: tuple[int, float, int] | None = None
    # What each name means is decided once per name of the symbol table: a region (exact line), a
    # user-code frame (function line), a batch read, or nothing. Only rows of names that mean
    # something are visited (a trace with stacks holds millions of other frames).
    ss_ids: set[int] = set()
    for nid, label in enumerate(names):
        key = None
        ss = parse_label(label)
        if ss:
            ss_ids.add(nid)
            path = file_table.resolve(ss.file_id) if file_table else None
            key = ("exact", path, ss.line) if path else None
        else:
            frame = parse_frame(label)
            path = frames.resolve(frame) if frame else None
            key = ("function", path, frame.line) if (frame and path) else None
        batch = (not _STEP.match(label)) and is_batch(label)
        if key is not None or batch:
            name_key[nid] = key
            batch_names[nid] = batch
    # older traces write record_function events (DataLoader's among them) as cpu_op: those named
    # like a batch read are visited too
    cpu_batch_ids = frozenset(nid for nid, batch in batch_names.items() if batch and not names[nid].startswith("aten::"))
    visit_kinds = (Kind.ANNOTATION, Kind.PYTHON)
    candidates = trace.rows_named(frozenset(name_key) | ss_ids)
    candidates = [i for i in candidates if ts_col[i] + dur_col[i] >= w0 and ts_col[i] <= cpu_end
                  and track_col[i] not in devices
                  and (kind_col[i] in visit_kinds or kind_col[i] == Kind.CPU_OP and name_col[i] in cpu_batch_ids)]
    saw_ss = any(name_col[i] in ss_ids and kind_col[i] in visit_kinds for i in candidates)
    visited = [i for i in candidates if name_col[i] in name_key]
    for i in visited:
        start, track, nid = ts_col[i], track_col[i], name_col[i]
        end = start + dur_col[i]
        key = name_key[nid]
        node = None
        # regions name exact lines, Python frames function lines (a name is one or the other)
        if key is not None and (key[0] == "exact") == (kind_col[i] != Kind.PYTHON):
            uid += 1
            node = _Node(start, end, key, uid)
            (ss_nodes if key[0] == "exact" else frame_nodes)[track].append(node)
        if batch_names[nid]:
            batch_iv.append((start, end))
            reads.setdefault(nid, []).append((track, start, end, i, node))
    nodes = ss_nodes if any(ss_nodes.values()) else frame_nodes
    locator = _Locator(nodes, links.main_track)
    # the signals by the time they hold; the line of the read comes from the one that holds most
    held = {nid: length(merge(clip(((r[1], r[2]) for r in occ), w0, w1))) for nid, occ in reads.items()}
    ranked = sorted(held, key=lambda nid: (-held[nid], names[nid]))
    for nid in ranked:
        if held[nid] >= SIGNAL_SHARE * held[ranked[0]]:
            batch_signals[names[nid]] = len(reads[nid])
    if ranked:
        top = reads[ranked[0]]
        first = min(top, key=lambda r: r[1])
        batch_first = (first[0], first[1], first[3])
        own = [r[4] for r in top if r[4] is not None]
        if own:  # the loop header's own region names the line exactly
            batch_line = next((node for node in own if node.key[0] == "exact"), own[0])
        elif not _library_read(names[ranked[0]]):
            batch_line = _statement_inside(locator, top)

    # --- GPU work in the window, its launches, and the host's waits on it
    gpu_rows = links.gpu_rows
    in_window_gpu = [g for g in gpu_rows if w0 <= ts_col[g] <= w1 or
                     (g in links.launch_row and w0 <= ts_col[links.launch_row[g]] <= cpu_end)]
    launches = [(g, links.launch_row[g]) for g in in_window_gpu if g in links.launch_row]
    launch_q = [(track_col[r], ts_col[r]) for _, r in launches]
    sync_rows = [r for r in links.sync_rows if w0 <= ts_col[r] <= cpu_end]
    sync_q = [(track_col[r], ts_col[r]) for r in sync_rows]

    # --- operators in the window, by thread (a ProfilerStep written as cpu_op, by older traces,
    # is the step, not an operator)
    step_names = frozenset(i for i, name in enumerate(names) if _STEP.match(name))
    ops_by_track = trace.rows_overlapping(Kind.CPU_OP, w0, cpu_end, skip_tracks=devices, skip_names=step_names)

    return EvidenceWindow(
        n=n, w0=w0, w1=w1, cpu_end=cpu_end, step_starts=[s.cpu_start for s in steps], frames=frames,
        locator=locator, line_precision="exact" if nodes is ss_nodes and ss_nodes else ("function" if frame_nodes else "none"),
        saw_ss=saw_ss, batch_merged=merge(clip(batch_iv, w0, w1)), batch_signals=batch_signals,
        batch_line=batch_line, batch_first=batch_first,
        gpu_busy=merge(clip(((ts_col[g], ts_col[g] + dur_col[g]) for g in gpu_rows), w0, w1)),
        in_window_gpu=in_window_gpu, launches=launches, launch_q=launch_q, launch_lines=locator.locate(launch_q),
        sync_rows=sync_rows, sync_q=sync_q, sync_lines=locator.locate(sync_q), has_stacks=_has_call_stacks(trace),
        ops_by_track=ops_by_track,
    )


def _operators(trace: Trace, links: Links, win: EvidenceWindow) -> _Operators:
    """The operator tree (order, parents, self times), and with `Call stack` args the call lines."""
    nested = nest_tracks(win.ops_by_track, trace.ts, trace.dur)
    _clip_own_times(nested, win.w0, win.w1)
    op_spans = {track: (starts, ends, rows) for track, (rows, starts, ends, _) in nested.tracks.items()}
    own_us = {track: own for track, (_, _, _, own) in nested.tracks.items()}
    parent = nested.parent
    launch_ops = _innermost_ops(trace, op_spans, parent, win.launch_q)
    calls = None
    launch_lines, sync_lines = win.launch_lines, win.sync_lines
    if win.has_stacks:
        calls = _CallPlaces(trace, CallLines(trace.names, win.frames), op_spans, parent, links.main_track,
                            win.step_starts)
        launch_lines, sync_lines = list(launch_lines), list(sync_lines)
        calls.fill_moments(win.launch_q, launch_ops, launch_lines)
        calls.fill_moments(win.sync_q, _innermost_ops(trace, op_spans, parent, win.sync_q), sync_lines)
    return _Operators(parent, own_us, op_spans, launch_ops, calls, launch_lines, sync_lines)


def _clip_own_times(nested: Nested, w0: float, w1: float) -> None:
    """Each operator's self time inside the window only: an op that starts before it or ends after it
    (a background thread's op spanning the window) holds only its time in the window, less that of
    the ops it holds, also clipped; so no op's self time per step exceeds the mean step. Tracks whose
    ops all lie inside the window (nearly all) are left as they are."""
    parent = nested.parent
    for rows, starts, ends, own in nested.tracks.values():
        if not rows or (starts[0] >= w0 and max(ends) <= w1):
            continue
        inside = {r: max(0.0, min(e, w1) - max(s, w0)) for r, s, e in zip(rows, starts, ends)}
        clipped = dict(inside)
        for r in rows:
            up = parent[r]
            if up in clipped:
                clipped[up] -= inside[r]
        own[:] = [clipped[r] for r in rows]


def operator_evidence(trace: Trace, links: Links, win: EvidenceWindow) -> dict:
    """The half of the evidence that needs every operator placed on a line: operators' self and GPU
    time (`ops`), host-to-device copies with the op that fed them, and the precision of lines.
    It is most of the work on a large trace (report.py computes it in a child process)."""
    tree = _operators(trace, links, win)
    line_of_op: dict[int, _Node | None] = {}
    # an operator of the backward counts on the forward line that recorded it (host_work.py)
    caused = backward_op_causes(trace, win, tree.op_spans, tree.parent)
    cause_of_op: dict[int, _Node | None] = {}
    op_tracks = []
    for track, (op_starts, _, rows) in tree.op_spans.items():
        located = win.locator.locate_sorted(track, op_starts)
        if tree.calls is not None:
            tree.calls.fill([track] * len(rows), op_starts, tree.calls.of_track_ops(rows), located)
        line_of_op.update(zip(rows, located))
        if caused:
            located = [caused.get(r, node) for r, node in zip(rows, located)]
        cause_of_op.update(zip(rows, located))
        op_tracks.append((rows, op_starts, tree.own_us[track], located))
    if tree.calls is not None:
        _batch_place(trace, win, tree)  # as the other half does: the call lines it meets count below
    precision = win.line_precision
    if precision == "none" and tree.calls is not None and tree.calls.nodes:
        precision = "call"
    return {
        "line_precision": precision,
        "ops": _operator_figures(trace, op_tracks, cause_of_op, win.launches, tree.launch_ops, win.batch_merged,
                                 win.n, bool(links.gpu_rows), win.w0, win.w1, frozenset(caused)),
        "h2d_copies": _copy_groups(trace, links, win.launches, tree.launch_ops, tree.launch_lines, tree.parent,
                                   tree.op_spans, line_of_op, win.batch_merged, win.step_of, win.n),
    }


def moment_evidence(trace: Trace, links: Links, steps: list[Step], win: EvidenceWindow,
                    file_table: FileTable | None) -> dict:
    """The half of the evidence about moments and intervals: the batch read, kernels and launches,
    host synchronisations, and names that appear only after the first step. It needs the operator
    tree only for traces whose lines come from `Call stack` args."""
    tree = _operators(trace, links, win) if win.has_stacks else None
    launch_lines = tree.launch_lines if tree else win.launch_lines
    sync_lines = tree.sync_lines if tree else win.sync_lines
    batch_node = _batch_place(trace, win, tree)
    gpu_observed = bool(links.gpu_rows)
    n = win.n
    # backward work belongs to the forward line that recorded it (host_work.py)
    cause_lines, forward_nodes = launch_causes(trace, win, launch_lines)
    return {
        "source": "stepscope" if win.saw_ss else "other",
        "call_stacks": win.has_stacks,
        "step_mean_ms": round((win.w1 - win.w0) / US_PER_MS / n, 4),
        "batch_read": {
            "ms": _ms(length(win.batch_merged), n),
            "gpu_busy_ms": _ms(_overlap(win.batch_merged, win.gpu_busy), n) if gpu_observed else None,
            "signals": list(win.batch_signals)[:5],
            **_where(batch_node),
        },
        "kernels": _kernel_figures(trace, win.in_window_gpu, win.gpu_busy, win.launches, launch_lines, cause_lines,
                                   win.w0, win.cpu_end, n) if gpu_observed else None,
        "syncs": _sync_figures(trace, win.sync_rows, sync_lines, win.gpu_busy, win.step_of, n, gpu_observed,
                               win.w0, win.w1, lambda r: wait_words(trace, links, r),
                               lambda r: wait_kind(trace, links, r)),
        "new_names": _new_names(trace, win.ops_by_track, steps, win.step_of, links.device_tracks, win.w0,
                                win.cpu_end, file_table),
        "phases": _phases(trace, links, win),
        "host_work": host_work(trace, links, win, launch_lines, forward_nodes),
    }


def _phases(trace: Trace, links: Links, win: EvidenceWindow) -> dict:
    """Backward operators and optimizer steps per step in the window, from their names: whether the
    step trains, even in a trace whose figures reach no source line."""
    out = {}
    for key, pattern in (("backward_ops", BACKWARD_NAME), ("optimizer_steps", OPTIMIZER_NAME)):
        ids = frozenset(i for i, name in enumerate(trace.names) if pattern.match(name))
        rows = [r for r in trace.rows_named(ids) if ids and trace.kind[r] in (Kind.CPU_OP, Kind.ANNOTATION)
                and trace.track[r] not in links.device_tracks and win.w0 <= trace.ts[r] <= win.cpu_end] if ids else []
        out[key] = round(len(rows) / win.n, 2)
    return out


def _has_call_stacks(trace: Trace) -> bool:
    """Whether any event carries a `Call stack` arg: one comparison of the column with "none" in C
    (about 0.2 ms for 400 k events), so traces without stacks pay nothing more for them."""
    stack = trace.stack
    return stack != array(stack.typecode, [-1]) * len(stack)


#: a batch-read signal is named when it holds at least this share of the time the longest one holds
SIGNAL_SHARE = 0.1
#: ... and a statement inside a hand-written read label holds the read when it covers this share of it
INSIDE_SHARE = 0.9


def _library_read(name: str) -> bool:
    """Whether a batch-read signal is the DataLoader's own event or frame (the library's, not a label the
    program wrote around its own reading code)."""
    return "DataLoader" in name or "torch/utils/data/" in name


def _statement_inside(locator: _Locator, occurrences: list) -> _Node | None:
    """For a hand-written read label (`with record_function("read_batch"): x, y = next(it)`): the
    outermost statement inside it that covers most of it, in the step's code or a function it calls;
    None when no statement inside covers `INSIDE_SHARE` of the label."""
    inside: dict[tuple, list] = {}  # line key -> [time inside the reads, a node]
    total = 0.0
    for track, start, end, _, _ in occurrences:
        total += end - start
        spans = locator.tracks.get(track)
        if spans is None:
            continue
        starts, ends, nodes = spans
        k = bisect.bisect_left(starts, start)
        outer_end = -1.0
        while k < len(starts) and starts[k] <= end:
            if ends[k] <= end and ends[k] > outer_end:  # outermost: not inside the last one taken
                entry = inside.setdefault(nodes[k].key, [0.0, nodes[k]])
                entry[0] += ends[k] - starts[k]
                outer_end = ends[k]
            k += 1
    if not inside or total <= 0:
        return None
    covered, node = max(inside.values(), key=lambda e: e[0])
    return node if covered >= INSIDE_SHARE * total else None


def _batch_place(trace: Trace, win: EvidenceWindow, tree: _Operators | None) -> _Node | None:
    """The line of the batch read, from the signal that holds the most time: its own node (the loop
    header's region), or for a hand-written label the statement inside it that holds the read; else the
    node open at that read's earliest start, else its call line (the read's own stack when it is an op,
    as 1.9 writes DataLoader's label, else the op open at its start)."""
    if win.batch_line is not None or win.batch_first is None:
        return win.batch_line
    track, start, row = win.batch_first
    found = win.locator.locate([(track, start)])[0]
    if found is None and tree is not None and tree.calls is not None:
        op = row if trace.kind[row] == Kind.CPU_OP else \
            _innermost_ops(trace, tree.op_spans, tree.parent, [(track, start)])[0]
        found = tree.calls.place(track, start, op)
    return found


def _operator_figures(trace: Trace, op_tracks: list[tuple[list[int], list[float], list[float], list]],
                      line_of_op: dict, launches: list[tuple[int, int]], launch_ops: list, batch: list[Interval],
                      n: int, gpu_observed: bool, w0: float, w1: float,
                      in_backward: frozenset[int] = frozenset()) -> list[dict]:
    """The operators by self and GPU time. `op_tracks`: per thread, its ops' rows, starts, self
    times and lines, aligned and sorted by start (as the operator tree holds them); `in_backward`:
    the rows that run in a backward op, placed on the forward line that recorded it (their calls at
    a line are counted apart too)."""
    starts = [lo for lo, _ in batch]
    ts, dur, name_col, names = trace.ts, trace.dur, trace.name, trace.names

    def in_batch(t: float) -> bool:
        k = bisect.bisect_right(starts, t) - 1
        return k >= 0 and t <= batch[k][1]

    # grouped by interned name id (one string lookup per name, not per event)
    self_by_name: dict[int, float] = defaultdict(float)
    count_by_name: Counter = Counter()
    time_at: dict[tuple[int, tuple], float] = {}  # (name id, line key) -> µs
    count_at: dict[tuple[int, tuple], int] = {}  # (name id, line key) -> calls
    backward_at: Counter = Counter()  # (name id, line key) -> calls of them in a backward op
    for rows, op_starts, own_us, lines in op_tracks:
        kept = _outside(op_starts, batch)  # ops that start in a batch read are not counted
        if kept != [(0, len(rows))]:  # one call a thread, over the kept ops in order
            rows, own_us, lines = (list(chain.from_iterable(seq[lo:hi] for lo, hi in kept))
                                   for seq in (rows, own_us, lines))
        add_self_times(time_at, count_at, name_col, rows, own_us, lines)
        if in_backward:
            for r, line in compress(zip(rows, lines), map(in_backward.__contains__, rows)):
                backward_at[(name_col[r], _key(line))] += 1
    line_time: dict[int, Counter] = defaultdict(Counter)
    own_at_line: dict[int, Counter] = defaultdict(Counter)  # the CPU self time alone, by line
    for (nid, key), us in time_at.items():  # few entries: a name's lines
        line_time[nid][key] += us
        own_at_line[nid][key] += us
        self_by_name[nid] += us
    for (nid, _), calls in count_at.items():
        count_by_name[nid] += calls
    gpu_iv: dict[int, list[Interval]] = defaultdict(list)
    for (g, r), op in zip(launches, launch_ops):
        if op is None or (starts and in_batch(ts[r])):
            continue
        nid = name_col[op]
        gpu_iv[nid].append((ts[g], ts[g] + dur[g]))
        line_time[nid][_key(line_of_op.get(op))] += dur[g]
    out = []
    for nid in set(self_by_name) | set(gpu_iv):
        best = line_time[nid].most_common(1)
        where = best[0][0] if best else (None, None, None)
        name = names[nid]
        out.append({
            "name": name,
            "role": op_role(name),
            "self_ms": _ms(self_by_name.get(nid, 0.0), n),
            "gpu_ms": _ms(length(merge(clip(gpu_iv.get(nid, []), w0, w1))), n) if gpu_observed else None,
            "count": round(count_by_name.get(nid, 0) / n, 2),
            "file": where[1], "line": where[2], "precision": where[0],
            # at that line only: what the line's own figures can be compared with
            "line_self_ms": _ms(own_at_line[nid].get(where, 0.0), n),
            "line_count": round(count_at.get((nid, where), 0) / n, 2),
            "line_backward_count": round(backward_at.get((nid, where), 0) / n, 2),
        })
    out.sort(key=lambda d: -max(d["self_ms"], d["gpu_ms"] or 0.0))
    return out[:15]


def _outside(times: list[float], merged: list[Interval]) -> list[tuple[int, int]]:
    """Position ranges [lo, hi) of sorted `times` that lie in none of the `merged` intervals (ends
    included in the intervals)."""
    ranges = []
    k = 0
    for lo, hi in merged:
        first, past = bisect.bisect_left(times, lo), bisect.bisect_right(times, hi)
        if first > k:
            ranges.append((k, first))
        k = max(k, past)
    if k < len(times):
        ranges.append((k, len(times)))
    return ranges


def _key(node: _Node | None) -> tuple:
    return node.key if node is not None else (None, None, None)


def _copy_groups(trace: Trace, links: Links, launches: list[tuple[int, int]], launch_ops: list, launch_lines: list,
                 parent: array, op_spans: dict[int, tuple[list[float], list[float], list[int]]], line_of_op: dict,
                 batch: list[Interval], step_of, n: int) -> list[dict]:
    """Host-to-device copies grouped by (line, bytes), with the factory op that fed them, if any."""
    top_level: dict[int, tuple[list[int], list[float]]] = {}

    def top_of(track: int) -> tuple[list[int], list[float]]:
        """The thread's top-level ops and their starts, in order (found when a copy first asks)."""
        if track not in top_level:
            starts, _, rows = op_spans.get(track, ([], [], []))
            is_top = list(map((-1).__eq__, map(parent.__getitem__, rows)))
            top_level[track] = (list(compress(rows, is_top)), list(compress(starts, is_top)))
        return top_level[track]

    bstarts = [lo for lo, _ in batch]
    groups: dict[tuple, dict] = {}
    for (g, r), op, line in zip(launches, launch_ops, launch_lines):
        if trace.kind[g] != Kind.MEMCPY or copy_direction(trace, g) != "h2d":
            continue
        ts = trace.ts[r]
        k = bisect.bisect_right(bstarts, ts) - 1
        in_read = k >= 0 and ts <= batch[k][1]
        factory = _feeding_factory(trace, op, parent, top_of, line_of_op, line)
        key = (_key(line), max(0, trace.nbytes[g]))
        grp = groups.setdefault(key, {"steps": set(), "count": 0, "factory": None, "in_batch_read": False})
        grp["steps"].add(step_of(ts))
        grp["count"] += 1
        grp["factory"] = grp["factory"] or factory
        grp["in_batch_read"] = grp["in_batch_read"] or in_read
    out = []
    for ((precision, path, line), nbytes), grp in groups.items():
        out.append({"file": path, "line": line, "precision": precision, "bytes": nbytes,
                    "per_step": round(grp["count"] / n, 2), "steps": len(grp["steps"]),
                    "factory": grp["factory"], "in_batch_read": grp["in_batch_read"]})
    out.sort(key=lambda d: (-d["steps"], -d["per_step"] * d["bytes"]))
    return out[:20]


#: ops that give another view of a tensor, or change nothing about its values, between a factory and the
#: copy of what it built (`torch.arange(n).reshape(a, b).to(dev)`, `torch.tensor(xs)` then `detach_`)
PASS_THROUGH_OPS = frozenset({
    "aten::reshape", "aten::view", "aten::_reshape_alias", "aten::unsqueeze", "aten::squeeze", "aten::expand",
    "aten::t", "aten::transpose", "aten::permute", "aten::flatten", "aten::unflatten", "aten::contiguous",
    "aten::detach", "aten::detach_", "detach_", "detach", "aten::alias", "aten::as_strided", "aten::view_as",
    "aten::reshape_as", "aten::expand_as", "aten::select", "aten::slice", "aten::requires_grad_",
})
#: how far back a copy looks for its factory: a statement's top-level ops between the two
_FACTORY_LOOKBACK = 8


def _feeding_factory(trace: Trace, op: int | None, parent: array, top_of, line_of_op: dict,
                     line: _Node | None) -> str | None:
    """The factory op that built the copied tensor: in the copy's own op chain; else, within the same
    line occurrence, the top-level op just before it — on an exact line (one statement), past ops that
    only reshape or view what the factory built (`PASS_THROUGH_OPS`); a function's line holds many
    statements, so there only the op just before counts — or `aten::lift_fresh` just after it
    (torch.tensor)."""
    if op is None:
        return None
    chain = [op]
    while parent[chain[-1]] >= 0:
        chain.append(parent[chain[-1]])
    for r in chain:
        if trace.label(r) in FACTORY_OPS - {"aten::lift_fresh"}:
            return trace.label(r)
    top = chain[-1]
    rows, starts = top_of(trace.track[top])
    k = bisect.bisect_left(starts, trace.ts[top])
    same_line = (lambda r: line_of_op.get(r) is line) if line is not None else (lambda r: True)
    lookback = _FACTORY_LOOKBACK if line is not None and line.key[0] == "exact" else 1
    for j in range(k - 1, max(-1, k - 1 - lookback), -1):
        name = trace.label(rows[j])
        if not same_line(rows[j]):
            break
        if name in FACTORY_OPS:
            return name
        if name not in PASS_THROUGH_OPS:
            break
    if k + 1 < len(rows) and trace.label(rows[k + 1]) == "aten::lift_fresh" and same_line(rows[k + 1]):
        return "aten::lift_fresh"
    return None


def _kernel_figures(trace: Trace, gpu_rows: list[int], busy: list[Interval], launches: list[tuple[int, int]],
                    launch_lines: list, cause_lines: list, w0: float, cpu_end: float, n: int) -> dict:
    """Kernels and launches per step; the line that causes the most kernels: its own launches and
    those of the backward its forward ops recorded (`cause_lines`, host_work.launch_causes)."""
    kernels = [g for g in gpu_rows if trace.kind[g] == Kind.KERNEL]
    durations = sorted(trace.dur[g] for g in kernels)
    per_line: Counter = Counter()
    backward_at: Counter = Counter()
    for (g, _), line, cause in zip(launches, launch_lines, cause_lines):
        if trace.kind[g] == Kind.KERNEL and cause is not None:
            per_line[cause.key] += 1
            if cause is not line:
                backward_at[cause.key] += 1
    launch_ids = frozenset(i for i, name in enumerate(trace.names) if _LAUNCH.search(name))
    launch_iv = [(trace.ts[r], trace.end(r)) for r in trace.rows_named(launch_ids)
                 if trace.kind[r] == Kind.RUNTIME and w0 <= trace.ts[r] <= cpu_end]
    top = per_line.most_common(1)
    where = top[0][0] if top else (None, None, None)
    # CUDA graph replays: one launch call replays many kernels (they carry its correlation id)
    graph_launch_rows = [r for r in trace.rows_named(launch_ids) if trace.kind[r] == Kind.RUNTIME
                         and _GRAPH_LAUNCH.search(trace.names[trace.name[r]]) and w0 <= trace.ts[r] <= cpu_end]
    graph_launch_set = set(graph_launch_rows)
    replayed = [g for g, r in launches if r in graph_launch_set and trace.kind[g] == Kind.KERNEL]
    replayed_names = {trace.names[trace.name[g]] for g in replayed}
    return {
        "count": round(len(kernels) / n, 2),
        "launches": round((len(kernels) - len(replayed) + len(graph_launch_rows)) / n, 2),
        "graph_launches": round(len(graph_launch_rows) / n, 2),
        "graph_kernels": round(len(replayed) / n, 2),
        "graph_backward": any(_BACKWARD_KERNEL.search(name) for name in replayed_names),
        "graph_optimizer": any(_OPTIMIZER_KERNEL.search(name) for name in replayed_names),
        "median_us": round(median(durations), 3) if durations else None,
        "p90_us": round(durations[int(0.9 * (len(durations) - 1))], 3) if durations else None,
        "gpu_busy_ms": _ms(length(busy), n),
        "launch_ms": _ms(length(merge(launch_iv)), n),
        "top_line_kernels": round(top[0][1] / n, 2) if top else 0,
        "top_line_backward_kernels": round(backward_at[where] / n, 2) if top else 0,
        "file": where[1], "line": where[2], "precision": where[0],
    }


def _sync_figures(trace: Trace, rows: list[int], lines: list, busy: list[Interval], step_of, n: int,
                  gpu_observed: bool, w0: float, w1: float, words, kind_of) -> dict:
    """The host's waits on the device: in all, and per line (`lines`, the 5 that wait longest, each
    with its calls per step, the steps it waits in, and its waits per step by kind). `words(row)` names
    a wait with what it waits for (links.wait_words), `kind_of(row)` says its kind (links.wait_kind)."""
    busy_starts = [lo for lo, _ in busy]
    idle_after = 0.0
    per_line: Counter = Counter()
    names: Counter = Counter()
    at_line: dict[tuple, dict] = {}
    for r, line in zip(rows, lines):
        end = trace.end(r)
        said = words(r)
        names[said] += 1
        key = _key(line)
        per_line[key] += trace.dur[r]
        entry = at_line.setdefault(key, {"rows": [], "calls": Counter(), "steps": set(), "kinds": Counter()})
        entry["rows"].append(r)
        entry["calls"][said] += 1
        entry["kinds"][kind_of(r)] += 1
        entry["steps"].add(step_of(trace.ts[r]))
        k = bisect.bisect_right(busy_starts, end)
        inside = k > 0 and busy[k - 1][1] > end
        if not inside and k < len(busy):
            idle_after += busy[k][0] - end
    top = per_line.most_common(1)
    where = top[0][0] if top else (None, None, None)

    def waited(rs: list[int]) -> float:
        return _ms(length(merge(clip(((trace.ts[r], trace.end(r)) for r in rs), w0, w1))), n)

    by_line = [{"file": key[1], "line": key[2], "precision": key[0], "ms": waited(entry["rows"]),
                "count": round(len(entry["rows"]) / n, 2), "steps": len(entry["steps"]),
                "calls": [name for name, _ in entry["calls"].most_common(3)],
                "kinds": {kind: round(c / n, 2) for kind, c in sorted(entry["kinds"].items())},
                "kind_ms": {kind: waited([r for r in entry["rows"] if kind_of(r) == kind])
                            for kind in sorted(entry["kinds"])}}
               for key, entry in at_line.items()]
    by_line.sort(key=lambda d: (-d["ms"], -d["count"]))
    return {
        "count": round(len(rows) / n, 2),
        "ms": waited(rows),
        "steps": len({step_of(trace.ts[r]) for r in rows}),
        "gpu_idle_after_ms": _ms(idle_after, n) if gpu_observed else None,
        "calls": [name for name, _ in names.most_common(3)],
        "file": where[1], "line": where[2], "precision": where[0],
        "lines": by_line[:5],
    }


def _new_names(trace: Trace, ops_by_track: dict[int, list[int]], steps: list[Step], step_of, devices: set[int],
               w0: float, cpu_end: float, file_table: FileTable | None) -> list[dict]:
    """Operators and regions absent from the first active step that appear in a later one."""
    if len(steps) < 2:
        return []
    ts, track, name_col, names = trace.ts, trace.track, trace.name, trace.names
    annotations = [i for i in trace.rows(Kind.ANNOTATION) if track[i] not in devices and w0 <= ts[i] <= cpu_end]
    first_seen: dict[int, float] = {}  # name id -> earliest start
    for rows in [*ops_by_track.values(), annotations]:
        # latest first: in the dict built from them, each name keeps its earliest start
        order = sorted(rows, key=ts.__getitem__, reverse=True)
        for nid, t in dict(zip(map(name_col.__getitem__, order), map(ts.__getitem__, order))).items():
            if t < first_seen.get(nid, float("inf")):
                first_seen[nid] = t
    first_step = {nid: step_of(t) for nid, t in first_seen.items()}  # name id -> first step it appears in
    late = sorted((k, names[nid]) for nid, k in first_step.items() if k > 0 and not _STEP.match(names[nid]))
    out = []
    for k, name in late[:10]:
        ss = parse_label(name)
        path = file_table.resolve(ss.file_id) if (ss and file_table) else None
        out.append({"name": name, "step": steps[k].name, "file": path, "line": ss.line if ss else None})
    return out
