"""The timeline of the active window for the trace panel: tracks, spans and step boundaries, bounded.

    spans = build_spans(trace, links, steps, file_table=..., source_root=..., batch_read_patterns=...)
    doc = summarize(spans)                                 # the whole window, at most DEFAULT_CAP spans
    doc = summarize(spans, start_us=1200.0, end_us=1800.0, cap=50_000)   # any range, finer

`build_spans` reads the trace once into a `SpanTable`: every complete event that overlaps the active
window (the first active step's start to the last one's completion, as the report's figures), one
row per span, in columns. `summarize` is a pure function of that table: the JSON-ready document the
panel reads (timeline.schema.json beside this module), for any time range, never holding more than `cap` spans.
The raw trace never leaves this module: names are interned, times are relative to the window's
start, and sources are `{fileId, line}` with a table of workspace-relative paths.

Invariants of the table:
- Spans are clipped to the window. `ProfilerStep#N` markers are not spans: the steps are a list of
  their own (start, CPU end and completion of each, as steps.py defines them).
- Each track's spans are contiguous and ordered by (start, -duration, file order). A span's `depth`
  is the number of spans of its track still open at its start, its `parent` the innermost of them
  (-1 at depth 0); so spans of one track and depth never overlap, and a parent is open when its
  child starts (an event that outlasts its parent, as Kineto sometimes writes, still nests).
- `category` is one of `CATEGORIES`: Stepscope's line regions, batch reads (the findings' patterns),
  other annotations, operators, Python frames, runtime calls, host synchronisations (links.py's),
  collectives, kernels, copies by direction, memsets, GPU-stream annotations, other device events.
- `line` (an index into `lines`, -1 for none): a region's own line (exact) and a user-code Python
  frame's def line (function precision); any other CPU span takes the line of the innermost line
  node holding it on its thread (regions when the trace has them, else frames), and on a thread
  without one the main thread's line open at its start; a GPU span takes its launch call's line. This
  is how attribution.py and the findings' evidence place moments on lines.

Invariants of a summary (`summarize`):
- At most `cap` spans; every step boundary kept; every span inside the requested range.
- Nothing is reduced when the range holds at most `cap` spans (`reduced` false, `resolution_us` 0).
  Otherwise spans shorter than `resolution_us` are merged with their neighbours of the same track,
  depth, parent and category while the gaps between them are shorter than it too; the spans a
  merged span's members hold are folded into it. Regions, batch reads and annotations are never
  merged (unless they alone exceed half the cap: then `notes` says so). A merged span grows no
  wider than MAX_MERGED_WIDTH resolutions. The resolution starts where a quarter of the cap is
  longer than it and doubles until the cap holds (past the range's length, neighbours of different
  categories merge too: category "mixed").
- Reduction never invents or loses busy time: a merged span lists its member count and `busy_us`,
  the exact union of what it stands for; the union of each track's spans in the summary, less the
  idle time its merged spans of depth 0 declare (`dur - busy`; deeper ones lie inside their parent),
  equals the union of the track's spans before.
"""

from __future__ import annotations

import re
from array import array
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import chain, compress
from pathlib import Path
from typing import Iterable

from ..agent.protocol import parse_label
from ..errors import UsageError
from ..trace import Kind, Trace
from .findings.evidence import _matcher as batch_matcher
from .findings.thresholds import DEFAULT_BATCH_READ_PATTERNS
from .labels import FileTable, FrameResolver, parse_frame
from .links import Links, copy_direction
from .steps import Step
from .timeline_kernels import (Columns, Entries, MainNodes, SpanColumns, examples, int_column, layout_track,
                               longest_at, pack_meaning, reduce_spans, rounded)

SCHEMA_VERSION = 1
#: spans a summary may hold: about 6 MB of JSON
DEFAULT_CAP = 200_000
#: names are cut to this many characters (kernel names of several kB carry nothing more for a reader)
MAX_NAME = 2000

CATEGORIES = (
    "region", "batch_read", "annotation", "operator", "python", "runtime", "sync", "collective",
    "kernel", "copy_h2d", "copy_d2h", "copy_d2d", "copy_other", "memset", "gpu_annotation", "device_other",
    "mixed",
)
CAT = {name: i for i, name in enumerate(CATEGORIES)}
#: categories a summary never merges: what the user labelled, and Stepscope's own line regions
NEVER_MERGED = frozenset({CAT["region"], CAT["batch_read"], CAT["annotation"], CAT["gpu_annotation"]})
#: GPU work whose time is the device computing, and copies (for the per-step breakdown)
GPU_COMPUTE = frozenset({CAT["kernel"], CAT["collective"]})
GPU_COPY = frozenset({CAT["copy_h2d"], CAT["copy_d2h"], CAT["copy_d2d"], CAT["copy_other"], CAT["memset"]})

_CPU_KINDS = (Kind.ANNOTATION, Kind.CPU_OP, Kind.PYTHON, Kind.RUNTIME)
_GPU_KINDS = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.GPU_ANNOTATION, Kind.DEVICE_SYNC, Kind.DEVICE_OTHER)
_STEP = re.compile(r"^ProfilerStep#\d+$")
#: host-side collective operations (c10d, gloo, NCCL's host side) and collective kernels (NCCL, RCCL)
_COLLECTIVE_OP = re.compile(r"^(c10d::|c10d_functional::|_c10d_functional::|gloo:|nccl:|record_param_comms$)")
_COLLECTIVE_KERNEL = re.compile(r"^(nccl|rccl)", re.IGNORECASE)
_COPY_CATEGORY = {"h2d": CAT["copy_h2d"], "d2h": CAT["copy_d2h"], "d2d": CAT["copy_d2d"], "other": CAT["copy_other"]}


@dataclass
class Track:
    trace_track: int  # id in trace.tracks
    label: str
    kind: str  # "cpu" or "gpu"
    main: bool = False


@dataclass
class SpanTable:
    """Every span of the active window, in columns aligned by span index (see the module's invariants)."""

    window: tuple[float, float]  # absolute µs, as the trace's clock
    steps: list[Step]
    per: str  # "step", or "window" for a trace without step markers
    gpu_observed: bool
    names: list[str]  # the trace's symbol table (span names are ids into it)
    tracks: list[Track]
    files: dict[str, str]  # file id -> workspace-relative path, for the lines used
    lines: list[tuple[str, int]]  # (file id, line)
    row: array = field(default_factory=lambda: array("i"))  # the trace row of each span
    track: array = field(default_factory=lambda: array("i"))  # index into `tracks`
    start: array = field(default_factory=lambda: array("d"))  # absolute µs, clipped to the window
    end: array = field(default_factory=lambda: array("d"))
    name: array = field(default_factory=lambda: array("i"))
    category: array = field(default_factory=lambda: array("b"))
    depth: array = field(default_factory=lambda: array("i"))
    parent: array = field(default_factory=lambda: array("i"))  # span index, -1 at depth 0
    line: array = field(default_factory=lambda: array("i"))  # index into `lines`, -1 for none
    #: operators: self time (as nesting.py defines it, over operators only; 0 for other spans), and 2
    #: where no operator of the same name holds it, 1 where one does (0: not an operator), so inclusive
    #: times never add recursion twice
    own: array = field(default_factory=lambda: array("d"))
    outer: array = field(default_factory=lambda: array("b"))
    #: GPU spans: the name id of the operator whose call launched it (-1 unknown, and for CPU spans)
    launch_op: array = field(default_factory=lambda: array("i"))
    #: input shapes recorded per operator name (only with --shapes): name id -> Counter of shape texts
    shapes: dict[int, Counter] = field(default_factory=dict)
    #: per span, the id (into `names`) of the operator's recorded input shapes, -1 for none; None where
    #: the trace recorded no shapes
    input_shapes: array | None = None

    def __len__(self) -> int:
        return len(self.start)

    def columns(self) -> SpanColumns:
        return SpanColumns(self.start, self.end, self.track, self.category, self.depth, self.parent)


class _FileIds:
    """Workspace-relative paths under file ids: the run's own ids (files.json) where the path is in
    its table, `x<n>` for other workspace files; paths outside the workspace get no id."""

    def __init__(self, table: FileTable | None, root: Path | None):
        self.table = table
        self.root = root.resolve() if root is not None else None
        self.used: dict[str, str] = {}
        self._by_rel = {rel: fid for fid, rel in table.files.items()} if table else {}
        self._by_path: dict[str, str | None] = {}
        self._extra = 0  # ids given so far to files outside the table

    def of_table(self, file_id: str) -> str | None:
        rel = self.table.files.get(file_id) if self.table else None
        if rel is None:
            return None
        self.used[file_id] = rel
        return file_id

    def of_path(self, path: str) -> str | None:
        if path in self._by_path:
            return self._by_path[path]
        fid = rel = None
        if self.root is not None:
            try:
                rel = Path(path).resolve().relative_to(self.root).as_posix()
            except (ValueError, OSError):
                rel = None
        if rel is not None:
            fid = self._by_rel.get(rel)
            if fid is None:
                taken = set(self._by_rel.values())
                while f"x{self._extra}" in taken:
                    self._extra += 1
                fid = self._by_rel[rel] = f"x{self._extra}"
            self.used[fid] = rel
        self._by_path[path] = fid
        return fid


def _sortable(value: int | str) -> tuple:
    return (0, value, "") if isinstance(value, int) else (1, 0, str(value))


def _track_label(trace: Trace, track: int, is_gpu: bool, several_processes: bool) -> str:
    pid, tid = trace.tracks[track]
    thread = trace.thread_names.get((pid, tid), "").strip()
    if is_gpu:
        return f"GPU {pid} · {thread or f'stream {tid}'}"
    label = thread or f"thread {tid}"
    if several_processes:
        process = trace.process_names.get(pid, "").strip()
        label = f"{process or 'process'} {pid} · {label}"
    return label


class _Meanings:
    """What each name of the window means, decided once per name from one of its events (a name is
    an operator, a region, a frame... by the kind of that event; traces do not give one name two kinds
    on the same side): category, own line, line node, operator."""

    def __init__(self, trace: Trace, links: Links, file_ids: _FileIds, frames: FrameResolver,
                 batch_read_patterns: Iterable[str]):
        self.trace = trace
        self.file_ids = file_ids
        self.frames = frames
        self.is_batch = batch_matcher(batch_read_patterns)
        self.sync_names = frozenset(map(trace.name.__getitem__, links.sync_rows))
        self.lines: list[tuple[str, int]] = []
        self._line_index: dict[tuple[str, int], int] = {}

    def line_of(self, fid: str | None, line: int) -> int:
        if fid is None:
            return -1
        key = (fid, line)
        k = self._line_index.get(key)
        if k is None:
            k = self._line_index[key] = len(self.lines)
            self.lines.append(key)
        return k

    def table(self, rows: Iterable[int]) -> tuple[array, list[int]]:
        """Packed meanings by name id (for the names of `rows`), and the node kind of each name."""
        trace = self.trace
        out = array("i", [pack_meaning(CAT["annotation"], -1, 0, False)]) * len(trace.names)
        nodes = [0] * len(trace.names)
        example = examples(rows, trace.name, len(trace.names))  # one row of each name
        for nid in compress(range(len(example)), map((-1).__ne__, example)):
            row = example[nid]
            category, own, node, is_op = self.classify(trace.kind[row], nid, row)
            out[nid] = pack_meaning(category, own, node, is_op)
            nodes[nid] = node
        return out, nodes

    def classify(self, kind: int, nid: int, row: int) -> tuple[int, int, int, bool]:
        label = self.trace.names[nid]
        own, node, is_op = -1, 0, False
        if kind == Kind.ANNOTATION:
            ss = parse_label(label)
            if ss is not None:
                own = self.line_of(self.file_ids.of_table(ss.file_id), ss.line)
                node = 1 if own >= 0 else 0
            category = CAT["batch_read"] if self.is_batch(label) else CAT["region"] if ss else CAT["annotation"]
        elif kind == Kind.CPU_OP:
            if _COLLECTIVE_OP.match(label):
                category, is_op = CAT["collective"], True
            elif not label.startswith("aten::") and self.is_batch(label):
                category = CAT["batch_read"]  # 1.9-era traces write record_function labels as operators
            else:
                category, is_op = CAT["operator"], True
        elif kind == Kind.PYTHON:
            frame = parse_frame(label)
            path = self.frames.resolve(frame) if frame else None
            if frame is not None and path is not None:
                own = self.line_of(self.file_ids.of_path(path), frame.line)
                node = 2 if own >= 0 else 0
            category = CAT["batch_read"] if self.is_batch(label) else CAT["python"]
        elif kind == Kind.RUNTIME:
            category = CAT["sync"] if nid in self.sync_names else CAT["runtime"]
        elif kind == Kind.KERNEL:
            category = CAT["collective"] if _COLLECTIVE_KERNEL.match(label) else CAT["kernel"]
        elif kind == Kind.MEMCPY:
            category = _COPY_CATEGORY[copy_direction(self.trace, row)]
        elif kind == Kind.MEMSET:
            category = CAT["memset"]
        elif kind == Kind.GPU_ANNOTATION:
            category = CAT["gpu_annotation"]
        elif kind == Kind.DEVICE_SYNC:
            category = CAT["sync"]
        else:
            category = CAT["device_other"]
        return category, own, node, is_op


def build_spans(trace: Trace, links: Links, steps: list[Step], *, file_table: FileTable | None = None,
                source_root: Path | None = None, per: str = "step",
                batch_read_patterns: Iterable[str] = DEFAULT_BATCH_READ_PATTERNS) -> SpanTable:
    """Every span of the active window of `steps` (see the module's invariants)."""
    w0, w1 = steps[0].cpu_start, steps[-1].completion
    devices = frozenset(links.device_tracks)
    names = trace.names
    step_names = frozenset(i for i, n in enumerate(names) if _STEP.match(n))
    cpu_rows: dict[int, list[int]] = defaultdict(list)
    gpu_rows: dict[int, list[int]] = defaultdict(list)
    for kind in _CPU_KINDS:
        for track, rows in trace.rows_overlapping(kind, w0, w1, skip_tracks=devices, skip_names=step_names).items():
            cpu_rows[track].extend(rows)
    not_devices = frozenset(range(len(trace.tracks))) - devices
    for kind in _GPU_KINDS:
        for track, rows in trace.rows_overlapping(kind, w0, w1, skip_tracks=not_devices, skip_names=step_names).items():
            gpu_rows[track].extend(rows)

    root = source_root or (file_table.root if file_table else None)
    file_ids = _FileIds(file_table, Path(root) if root else None)
    meanings = _Meanings(trace, links, file_ids, FrameResolver(Path(root) if root else None, file_table),
                         batch_read_patterns)
    cpu_meaning, cpu_nodes = meanings.table(list(chain.from_iterable(cpu_rows.values())))
    gpu_meaning, _ = meanings.table(list(chain.from_iterable(gpu_rows.values())))
    # lines are placed by Stepscope's regions when the window holds any, else by user-code frames
    node_kind = 1 if 1 in cpu_nodes else 2

    main = links.main_track
    several = len({trace.tracks[t][0] for t in cpu_rows}) > 1
    cpu_order = sorted(cpu_rows, key=lambda t: (t != main, *map(_sortable, trace.tracks[t])))
    gpu_order = sorted(gpu_rows, key=lambda t: tuple(map(_sortable, trace.tracks[t])))
    table = SpanTable(window=(w0, w1), steps=steps, per=per, gpu_observed=bool(links.gpu_rows), names=names,
                      tracks=[], files=file_ids.used, lines=meanings.lines)
    columns = Columns(trace.ts, trace.dur, trace.name)
    row_line = int_column(len(trace) + 1)  # one more, always -1: what row -1 (no launch call) reads
    row_op = int_column(len(trace) + 1)
    name_open = int_column(len(names), 0)
    main_nodes: MainNodes | None = None
    for kind, order in (("cpu", cpu_order), ("gpu", gpu_order)):
        for t in order:
            rows = (cpu_rows if kind == "cpu" else gpu_rows)[t]
            offset = len(table.start)
            layout = layout_track(rows, columns, cpu_meaning if kind == "cpu" else gpu_meaning, node_kind, w0, w1,
                                  links.launch_row if kind == "gpu" else None, row_line, row_op, name_open, offset,
                                  None if t == main else main_nodes)
            n = len(layout.order)
            table.tracks.append(Track(t, _track_label(trace, t, kind == "gpu", several), kind, t == main))
            table.row.extend(layout.order)
            table.track.extend(array("i", [len(table.tracks) - 1]) * n)
            table.start.extend(layout.start)
            table.end.extend(layout.end)
            table.name.extend(layout.name)
            table.category.extend(layout.category)
            table.depth.extend(layout.depth)
            table.parent.extend(layout.parent)
            table.line.extend(layout.line)
            table.own.extend(layout.own)
            table.outer.extend(layout.outer)
            table.launch_op.extend(layout.launch_op)
            if t == main:
                main_nodes = (array("d", compress(layout.start, layout.node)), array("d", compress(layout.end, layout.node)),
                              array("i", compress(layout.line, layout.node)))
    if trace.rows_with(trace.shapes):
        _shapes(table, trace)
    return table


def _shapes(table: SpanTable, trace: Trace) -> None:
    shapes = trace.shapes
    table.input_shapes = per_span = array("i", [-1]) * len(table.row)
    for i in compress(range(len(table.row)), table.outer):
        shape = shapes[table.row[i]]
        if shape >= 0:
            table.shapes.setdefault(table.name[i], Counter())[shape] += 1
            per_span[i] = shape


#: the smallest cap a summary accepts: room for every track and the step boundaries around them
MIN_CAP = 1000
#: a merged span never grows wider than this many resolutions (so its place stays readable)
MAX_MERGED_WIDTH = 4
_NEVER_MERGED_MASK = bytes(1 if i in NEVER_MERGED else 0 for i in range(len(CATEGORIES)))
_NEVER_MERGED_BYTES = bytes(1 if i in NEVER_MERGED else 0 for i in range(256))  # a category byte -> 0/1
#: the first resolution tried shows about this share of the cap as whole spans (the rest merged)
_FIRST_SHARE = 4


def summarize(spans: SpanTable, start_us: float | None = None, end_us: float | None = None, *,
              cap: int = DEFAULT_CAP) -> dict:
    """The panel's document for [start_us, end_us] (µs from the window's start; default: the whole
    window) with at most `cap` spans (see the module's invariants)."""
    w0, w1 = spans.window
    length = w1 - w0
    lo = 0.0 if start_us is None else float(start_us)
    hi = length if end_us is None else float(end_us)
    if not (lo == lo and hi == hi) or lo < 0 or hi > length * (1 + 1e-12) + 1e-9 or hi <= lo:  # NaN fails x == x
        raise UsageError(f"timeline range [{lo}, {hi}] µs is not inside the window [0, {length:.3f}] µs")
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < MIN_CAP:
        raise UsageError(f"timeline cap {cap!r} is below the smallest one ({MIN_CAP} spans)")
    if len(spans.tracks) > cap // 4:
        raise UsageError(f"timeline cap {cap} is too small for {len(spans.tracks)} threads and streams")
    hi = min(hi, length)
    a, b = w0 + lo, w0 + hi
    cols = spans.columns()
    whole = lo == 0 and hi == length  # every span of the table is in the window (clipped to it)
    entries = None if whole and len(spans) > cap else reduce_spans(cols, a, b, 0.0, True, False, _NEVER_MERGED_MASK,
                                                                   CAT["mixed"], 0.0)
    selected = cols if entries is None else entries
    in_range = len(selected.start)
    notes: list[str] = []
    resolution = 0.0
    if in_range > cap:
        labelled = selected.category.tobytes().translate(_NEVER_MERGED_BYTES).count(1)
        keep_labelled = labelled <= cap // 2
        if not keep_labelled:
            notes.append(f"{labelled} regions and annotations in this range, more than half the cap of {cap} "
                         "spans: short ones are merged like other spans")
        resolution = max(longest_at(selected.start, selected.end, cap // _FIRST_SHARE), (hi - lo) / 2**20, 1e-3)
        mixed = False
        while True:
            entries = reduce_spans(cols, a, b, resolution, keep_labelled, mixed, _NEVER_MERGED_MASK, CAT["mixed"],
                                   MAX_MERGED_WIDTH * resolution)
            if len(entries) <= cap:
                break
            if resolution > hi - lo:
                mixed = True  # neighbours of different categories merge too (category "mixed")
            resolution *= 2
        merged = len(entries) - entries.count.count(0)
        notes.append(f"{in_range} spans in this range, {len(entries)} shown: spans shorter than "
                     f"{_fmt_us(resolution)} are merged with their neighbours ({merged} merged spans, each with "
                     "the number of spans it stands for and its busy time); regions and step boundaries are all kept")
    return _document(spans, entries, lo, hi, cap, resolution, in_range, notes)


def _fmt_us(us: float) -> str:
    return f"{us / 1000:.3g} ms" if us >= 1000 else f"{us:.3g} µs"


def _interned(values: Iterable[int]) -> tuple[list[int], list[int]]:
    """(distinct values in first-seen order, each value's position among them); -1 stays -1."""
    values = list(values)
    distinct = [v for v in dict.fromkeys(values) if v >= 0]
    where = {v: k for k, v in enumerate(distinct)}
    where[-1] = -1
    return distinct, list(map(where.__getitem__, values))


def _document(spans: SpanTable, entries: Entries, lo: float, hi: float, cap: int, resolution: float,
              in_range: int, notes: list[str]) -> dict:
    w0 = spans.window[0]
    index = entries.index
    name_ids, col_name = _interned(map(spans.name.__getitem__, index))
    line_ids, col_line = _interned(map(spans.line.__getitem__, index))
    lines = [spans.lines[k] for k in line_ids]
    col_track = list(map(spans.track.__getitem__, index))
    col_depth = list(map(spans.depth.__getitem__, index))
    rows = [0] * len(spans.tracks)
    for t, d in dict.fromkeys(zip(col_track, col_depth)):
        if d >= rows[t]:
            rows[t] = d + 1
    merged = list(compress(range(len(entries)), entries.count))
    used = {f for f, _ in lines}
    steps = []
    previous = None
    for step in spans.steps:
        begin = step.cpu_start if previous is None else previous
        steps.append({"name": step.name, "start_us": round(begin - w0, 3),
                      "cpu_start_us": round(step.cpu_start - w0, 3), "cpu_end_us": round(step.cpu_end - w0, 3),
                      "completion_us": round(step.completion - w0, 3), "ms": round(step.ms, 4),
                      "cpu_known": not step.from_gpu_markers})
        previous = step.completion
    return {
        "schema_version": SCHEMA_VERSION,
        "window": {"duration_us": round(spans.window[1] - w0, 3), "per": spans.per,
                   "steps": len(spans.steps) if spans.per == "step" else 0, "gpu_observed": spans.gpu_observed},
        "range": {"start_us": round(lo, 3), "end_us": round(hi, 3)},
        "cap": cap,
        "reduced": resolution > 0,
        "resolution_us": round(resolution, 3),
        "spans_in_range": in_range,
        "notes": notes,
        "categories": list(CATEGORIES),
        "tracks": [{"label": tr.label, "kind": tr.kind, "main": tr.main, "rows": rows[k]}
                   for k, tr in enumerate(spans.tracks)],
        "names": [_short(spans.names[nid]) for nid in name_ids],
        "files": {fid: rel for fid, rel in spans.files.items() if fid in used},
        "lines": {"file": [f for f, _ in lines], "line": [n for _, n in lines]},
        "spans": {"track": col_track, "start_us": rounded(entries.start, w0),
                  "dur_us": rounded(entries.end, 0.0, entries.start), "name": col_name,
                  "category": entries.category.tolist(), "depth": col_depth, "line": col_line},
        "merged": {"span": merged, "count": [entries.count[k] for k in merged],
                   "busy_us": rounded(array("d", [entries.busy[k] for k in merged]), 0.0)},
        "steps": steps,
    }


def _short(name: str) -> str:
    return name if len(name) <= MAX_NAME else name[: MAX_NAME - 1] + "…"

