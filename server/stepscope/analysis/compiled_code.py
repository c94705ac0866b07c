"""Compiled code on the user's lines: Inductor's kernels, through the compiler's own records.

Stepscope's line labels cannot run inside a compiled graph (the agent keeps them out of Dynamo's
way), so a compiled graph's work first lands on the line that calls the compiled code. This module
puts each of the graph's kernels back on the lines that produced it, from the run's `compile.json`
(agent/compile_log.py: Inductor's provenance, the stack traces of the FX nodes each kernel was
made from, per graph cache key):

- A graph call is the trace's `## Call CompiledFxGraph <key> ##` region. Inside it, in order, the
  kernel calls: Inductor's C++ kernels (`graph_<n>_cpp_fused_...` records, on the CPU with kernel
  profiling on), its Triton kernels (`triton_...` records around each launch, on the GPU) and its
  extern kernels (the aten op each calls: `extern_kernels.mm` is `aten::mm`). They are aligned in
  order with the graph's provenance entries (generation order, by debug handle), each call to the
  next entry of the same name; a call that matches none stays on the calling line.
- A graph replayed from a CUDA graph (`mode="reduce-overhead"`: a `cudaGraphLaunch` inside the
  call) has no call per kernel: the replayed kernels (linked to the graph launch) are aligned by
  their Triton names, and the other kernels between two named ones go to the extern entries
  between those two (shared among them when there are several).
- A kernel's lines are the innermost workspace frame of each of its stack traces ("own" lines;
  several when Inductor fused work of several statements) and the workspace frames that called
  them inside the compiled code (inclusive, as nested lines are in eager code). A stack frame whose
  line no longer holds the code the record quotes (a cached compilation of an older file) is
  dropped.
- A graph called from inside `CompiledFunctionBackward` is a backward graph: AOTAutograd gives its
  nodes their forward nodes' stack traces, so its kernels land on their forward lines, in
  `backward_ms` / `backward_gpu_ms`, never in `wall_ms` / `gpu_ms` (as in eager code).

Invariants:
- Figures are unions of intervals ÷ active steps, like every line's: a fused kernel shown on each of
  its lines (with `compiled.fused_with` naming the others and `compiled.shared_ms` / `shared_gpu_ms`
  the part in shared kernels) is counted once per line and never summed into a total; the step's
  own figures come from the trace, not from the lines.
- Lines made here have precision "compiled". Nothing is guessed: without records, or for a kernel
  they do not name, the work stays on the line that calls the compiled code, and the summary says
  how much and why.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..trace import Kind, Trace
from .intervals import Interval, clip, union_length
from .labels import FileTable, FrameResolver
from .links import Links, copy_direction
from .steps import Step

GRAPH_CALL = re.compile(r"^## Call CompiledFxGraph (\S+) ##$")
_CPP_KERNEL = re.compile(r"^graph_\d+_(cpp_\S+)$")
_STACK_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>[0-9]+), in (?P<function>[^\n]+)\n(?P<code>[^\n]*)')
_BACKWARD_OP = re.compile(r"^(autograd::engine::evaluate_function: )?CompiledFunctionBackward$")
_GRAPH_LAUNCH = re.compile(r"^(cuda|hip)GraphLaunch")
_HANDLE = re.compile(r"^(?P<name>.+):(?P<handle>[0-9]+)$")
US_PER_MS = 1000.0

LineKey = tuple[str, int]  # (absolute path, line)


@dataclass(frozen=True)
class Entry:
    """One kernel of a compiled graph, as Inductor's provenance names it."""

    name: str  # what the trace calls it: "cpp_fused_add_0", "triton_poi_fused_add_0", "aten::mm"
    handle: int
    extern: bool
    own: frozenset  # LineKey of the innermost workspace frame of each stack trace
    enclosing: frozenset  # LineKey of the workspace frames that called those, inside the compiled code

    @property
    def lines(self) -> frozenset:
        return self.own | self.enclosing


@dataclass
class GraphRecords:
    """The provenance of the compiled graphs of a run, by graph cache key."""

    graphs: dict[str, list[Entry]] = field(default_factory=dict)
    unkeyed: list[list[Entry]] = field(default_factory=list)  # graphs whose cache key was not recorded
    stale_frames: int = 0  # stack frames dropped: the line no longer holds the quoted code
    torch: str | None = None


def _call_name(kernel: str) -> tuple[str, bool]:
    """The trace's name of a provenance kernel name, and whether it is an extern kernel."""
    if kernel.startswith(("cpp_", "triton_", "cpp_fused")):
        return kernel, False
    parts = kernel.split(".")
    if parts[0] == "extern_kernels" and len(parts) > 1:
        return f"aten::{parts[1]}", True
    if "aten" in parts and parts.index("aten") + 1 < len(parts):
        return f"aten::{parts[parts.index('aten') + 1]}", True
    return kernel, False


class _Sources:
    """Reads the user's files once: to check a record's quoted code against its line, and to name the
    statement a line belongs to (a stack frame can point into a statement spread over several lines;
    Stepscope's own labels name a statement by its first line)."""

    def __init__(self) -> None:
        self._lines: dict[str, list[str] | None] = {}
        self._starts: dict[str, dict[int, int]] = {}

    def _read(self, path: str) -> list[str] | None:
        if path not in self._lines:
            try:
                text = Path(path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = None
            self._lines[path] = text.splitlines() if text is not None else None
            self._starts[path] = _statement_starts(text) if text is not None else {}
        return self._lines[path]

    def holds(self, path: str, line: int, code: str) -> bool:
        text = self._read(path)
        if text is None:
            return True  # the source is not here (a trace read elsewhere): the record is all there is
        return 0 < line <= len(text) and text[line - 1].strip() == code.strip()

    def statement(self, path: str, line: int) -> int:
        self._read(path)
        return self._starts.get(path, {}).get(line, line)


def _statement_starts(text: str) -> dict[int, int]:
    """For each line inside a simple statement spread over several lines, the statement's first line."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    out: dict[int, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not hasattr(node, "body"):
            end = getattr(node, "end_lineno", None) or node.lineno
            for n in range(node.lineno + 1, end + 1):
                out[n] = node.lineno
    return out


def resolve_recorded(path: str, resolver: FrameResolver) -> str | None:
    """A path as the compiler recorded it (absolute, on the machine that ran the program) as a
    workspace file here: as the frames' paths are resolved, else (a run folder analysed on another
    machine, or moved) the one file of the run's file table whose relative path ends it."""
    found = resolver.resolve_path(path)
    if found is not None or resolver.table is None:
        return found
    posix = path.replace("\\", "/")
    hits = [rel for rel in resolver.table.files.values() if posix.endswith("/" + rel)]
    if len(hits) == 1:
        return str(resolver.table.root.joinpath(*hits[0].split("/")))
    return None


def read_records(doc: Any, resolver: FrameResolver) -> GraphRecords | None:
    """The graphs of a `compile.json` document, their kernels' lines resolved to workspace files;
    None when the document holds no graph."""
    if not isinstance(doc, dict) or not isinstance(doc.get("graphs"), list):
        return None
    out = GraphRecords(torch=doc.get("torch") if isinstance(doc.get("torch"), str) else None)
    sources = _Sources()
    for graph in doc["graphs"]:
        kernels = graph.get("kernels") if isinstance(graph, dict) else None
        if not isinstance(kernels, dict):
            continue
        entries = []
        for key, stacks in kernels.items():
            m = _HANDLE.match(str(key))
            if not m or not isinstance(stacks, list):
                continue
            name, extern = _call_name(m.group("name"))
            own, enclosing = set(), set()
            for stack in stacks:
                frames = []
                for f in _STACK_FRAME.finditer(str(stack)):
                    path = resolve_recorded(f.group("file"), resolver)
                    line = int(f.group("line"))
                    if path is None:
                        continue
                    if not sources.holds(path, line, f.group("code")):
                        out.stale_frames += 1
                        continue
                    frames.append((path, sources.statement(path, line)))
                if frames:
                    own.add(frames[-1])
                    enclosing.update(frames[:-1])
            entries.append(Entry(name, int(m.group("handle")), extern, frozenset(own), frozenset(enclosing - own)))
        entries.sort(key=lambda e: e.handle)
        key = graph.get("key")
        if isinstance(key, str) and key:
            out.graphs[key] = entries
        else:
            out.unkeyed.append(entries)
    return out if (out.graphs or out.unkeyed) else None


# -- the trace side ---------------------------------------------------------------------------------
@dataclass
class _Work:
    """What one line received from compiled graphs in the window."""

    calls: list[tuple[int, float, float]] = field(default_factory=list)  # (track, start, end), forward
    bwd_calls: list[tuple[int, float, float]] = field(default_factory=list)
    gpu: set = field(default_factory=set)  # gpu rows, forward
    bwd_gpu: set = field(default_factory=set)
    shared_calls: list[tuple[int, float, float]] = field(default_factory=list)
    shared_gpu: set = field(default_factory=set)
    fused_with: set = field(default_factory=set)  # other own lines of the forward kernels shared with this one
    backward_fused_with: set = field(default_factory=set)
    kernels: dict = field(default_factory=lambda: defaultdict(int))  # forward kernel name -> calls in the window
    bwd_kernels: dict = field(default_factory=lambda: defaultdict(int))


@dataclass
class CompiledAttribution:
    lines: list[dict]
    summary: dict | None  # the report's `compiled_code`
    notes: list[str]


def _children(trace: Trace, rows_by_track: dict[int, tuple[list[float], list[int]]], track: int,
              start: float, end: float) -> list[int]:
    """The outermost CPU events strictly inside [start, end] on `track`, in time order."""
    starts, rows = rows_by_track.get(track, ([], []))
    lo, hi = bisect.bisect_left(starts, start), bisect.bisect_right(starts, end)
    out: list[int] = []
    open_end = start - 1.0
    ts, dur = trace.ts, trace.dur
    for r in rows[lo:hi]:
        s = ts[r]
        e = s + dur[r]
        if s == start and e == end:
            continue  # the call itself
        if e > end or s < open_end:
            continue  # outside, or nested in the previous child
        out.append(r)
        open_end = e
    return out


def _align(calls: list[tuple[str, int]], entries: list[Entry]) -> list[tuple[int, Entry]]:
    """Each call (name, row) matched in order to the next entry of the same name; the calls that
    match none are left out (they stay on the calling line)."""
    out = []
    j = 0
    for name, row in calls:
        for k in range(j, len(entries)):
            if entries[k].name == name:
                out.append((row, entries[k]))
                j = k + 1
                break
    return out


def _align_replay(kernel_rows: list[int], trace: Trace, entries: list[Entry]) -> list[tuple[int, list[Entry]]]:
    """Replayed kernels (in time order) matched to entries: named (Triton) kernels by name, in order;
    the kernels between two named ones to the extern entries between those (see the docstring)."""
    anchors: list[tuple[int, int]] = []  # (index in kernel_rows, index in entries)
    j = 0
    for i, g in enumerate(kernel_rows):
        name = trace.label(g)
        for k in range(j, len(entries)):
            if not entries[k].extern and entries[k].name == name:
                anchors.append((i, k))
                j = k + 1
                break
    out: list[tuple[int, list[Entry]]] = [(kernel_rows[i], [entries[k]]) for i, k in anchors]
    bounds = [(-1, -1), *anchors, (len(kernel_rows), len(entries))]
    for (i0, k0), (i1, k1) in zip(bounds, bounds[1:]):
        externs = [e for e in entries[k0 + 1:k1] if e.extern]
        if not externs:
            continue
        out.extend((kernel_rows[i], externs) for i in range(i0 + 1, i1))
    return out


def attribute_compiled(trace: Trace, links: Links, steps: list[Step], records: GraphRecords | None, *,
                       compile_doc_present: bool) -> CompiledAttribution:
    """The lines of compiled code and the summary of what was and was not attributed."""
    n = len(steps)
    w0, w1 = steps[0].cpu_start, steps[-1].completion
    devices = links.device_tracks
    call_ids = {i: m.group(1) for i, name in enumerate(trace.names) if (m := GRAPH_CALL.match(name))}
    if not call_ids:
        return CompiledAttribution([], None, [])
    graph_calls = [r for r in trace.rows_named(frozenset(call_ids))
                   if trace.track[r] not in devices and w0 <= trace.ts[r] <= w1]
    if not graph_calls:
        return CompiledAttribution([], None, [])

    # CPU events by track, by start (the calls' children), and the backward ops' spans
    cpu_rows: dict[int, list[int]] = defaultdict(list)
    ts, dur, track_col = trace.ts, trace.dur, trace.track
    for r in trace.rows(Kind.CPU_OP, Kind.ANNOTATION, Kind.RUNTIME):
        t, start = track_col[r], ts[r]
        if t not in devices and w0 <= start + dur[r] and start <= w1:
            cpu_rows[t].append(r)
    by_track: dict[int, tuple[list[float], list[int]]] = {}
    for track, rows in cpu_rows.items():
        rows.sort(key=lambda r: (ts[r], -dur[r]))
        by_track[track] = ([ts[r] for r in rows], rows)
    backward_ids = frozenset(i for i, name in enumerate(trace.names) if _BACKWARD_OP.match(name))
    backward_spans: dict[int, list[Interval]] = defaultdict(list)
    for r in trace.rows_named(backward_ids):
        backward_spans[trace.track[r]].append((trace.ts[r], trace.end(r)))
    launched: dict[int, list[int]] = defaultdict(list)  # runtime row -> gpu rows it launched
    for g, r in links.launch_row.items():
        launched[r].append(g)

    work: dict[LineKey, _Work] = defaultdict(_Work)
    kernel_calls = attributed_calls = replayed = replayed_attributed = 0
    graphs_seen: set[str] = set()
    unknown_graphs: set[str] = set()

    def give(entry: Entry, backward: bool, cpu: tuple[int, float, float] | None, gpu_rows: Iterable[int],
             together: frozenset = frozenset()) -> None:
        """`together`: the own lines of every entry a replayed kernel was matched to (several when
        it could be any of them): it is shared among them all."""
        gpu_rows = list(gpu_rows)
        own = entry.own | together
        shared = len(own) > 1
        for key in entry.lines:
            w = work[key]
            if cpu is not None:
                (w.bwd_calls if backward else w.calls).append(cpu)
            (w.bwd_gpu if backward else w.gpu).update(gpu_rows)
            (w.bwd_kernels if backward else w.kernels)[entry.name] += 1
            if key in entry.own and shared:
                if backward:
                    w.backward_fused_with.update(own - {key})
                    continue
                if cpu is not None:
                    w.shared_calls.append(cpu)
                w.shared_gpu.update(gpu_rows)
                w.fused_with.update(own - {key})

    for call in graph_calls:
        key = call_ids[trace.name[call]]
        graphs_seen.add(key)
        entries = records.graphs.get(key) if records else None
        track, start, end = trace.track[call], trace.ts[call], trace.end(call)
        backward = any(s <= start and end <= e for s, e in backward_spans.get(track, ()))
        children = _children(trace, by_track, track, start, end)
        named: list[tuple[str, int]] = []
        replay_rows: list[int] = []
        for r in _runtime_inside(trace, by_track, track, start, end):  # at any depth inside the call
            if _GRAPH_LAUNCH.match(trace.label(r)):
                replay_rows.extend(g for g in launched.get(r, ()) if trace.kind[g] == Kind.KERNEL)
        for r in children:
            label = trace.label(r)
            if trace.kind[r] == Kind.RUNTIME:
                continue
            m = _CPP_KERNEL.match(label)
            if m:
                named.append((m.group(1), r))
            elif label.startswith("triton_") or label.startswith("aten::"):
                named.append((label, r))
        kernel_calls += sum(1 for name, _ in named if not name.startswith("aten::"))
        replay_rows.sort(key=trace.ts.__getitem__)
        replayed += len(replay_rows)
        if entries is None:
            unknown_graphs.add(key)
            continue
        for r, entry in _align(named, entries):
            if not entry.lines:
                continue
            gpu_rows = [g for rt in _runtime_inside(trace, by_track, track, trace.ts[r], trace.end(r))
                        for g in launched.get(rt, ())]
            give(entry, backward, (track, trace.ts[r], trace.end(r)), gpu_rows)
            if not entry.extern:
                attributed_calls += 1
        for g, matched in _align_replay(replay_rows, trace, entries):
            lines = [e for e in matched if e.lines]
            if not lines:
                continue
            replayed_attributed += 1
            together = frozenset().union(*(e.own for e in lines)) if len(lines) > 1 else frozenset()
            for e in lines:
                give(e, backward, None, [g], together)

    syncs: dict[int, list[Interval]] = defaultdict(list)
    for r in links.sync_rows:
        syncs[trace.track[r]].append((trace.ts[r], trace.end(r)))
    for spans in syncs.values():
        spans.sort()
    lines = [_figures(trace, key, w, n, bool(links.gpu_rows), syncs) for key, w in work.items()]
    lines.sort(key=lambda d: (-(d["wall_ms"] + (d["backward_ms"] or 0.0)), d["file"], d["line"]))
    summary = {
        "source": "inductor provenance" if records else None,
        "torch": records.torch if records else None,
        "graphs_called": len(graphs_seen),
        "graphs_without_records": len(unknown_graphs),
        "kernel_calls_per_step": round(kernel_calls / n, 2),
        "kernel_calls_attributed_per_step": round(attributed_calls / n, 2),
        "replayed_kernels_per_step": round(replayed / n, 2),
        "replayed_kernels_attributed_per_step": round(replayed_attributed / n, 2),
        "lines": len(lines),
        "stale_frames": records.stale_frames if records else 0,
    }
    return CompiledAttribution(lines, summary, _notes(summary, records, compile_doc_present))


def _runtime_inside(trace: Trace, by_track: dict[int, tuple[list[float], list[int]]], track: int,
                    start: float, end: float) -> list[int]:
    starts, rows = by_track.get(track, ([], []))
    lo, hi = bisect.bisect_left(starts, start), bisect.bisect_right(starts, end)
    kind, runtime = trace.kind, Kind.RUNTIME
    return [r for r in rows[lo:hi] if kind[r] == runtime]


def _notes(summary: dict, records: GraphRecords | None, compile_doc_present: bool) -> list[str]:
    if records is None:
        why = ("the run's compile.json holds no kernel provenance (torch before 2.8 records none, or provenance "
               "tracking was off)" if compile_doc_present else
               "the run has no compile.json (recorded with --no-compile-records, by an older Stepscope, or not by "
               "Stepscope)")
        return [f"compiled code: {summary['graphs_called']} compiled graph(s) ran in the window, but {why}: their "
                "kernels stay on the line that calls the compiled code"]
    notes = []
    left = summary["kernel_calls_per_step"] - summary["kernel_calls_attributed_per_step"]
    if summary["graphs_without_records"]:
        notes.append(f"compiled code: {summary['graphs_without_records']} compiled graph(s) have no provenance "
                     "record (compiled before the records were taken, or by another process): their kernels stay "
                     "on the line that calls the compiled code")
    if left > 0:
        notes.append(f"compiled code: {left:g} generated kernel call(s) per step could not be matched to a "
                     "provenance record: they stay on the line that calls the compiled code")
    replay_left = summary["replayed_kernels_per_step"] - summary["replayed_kernels_attributed_per_step"]
    if replay_left > 0:
        notes.append(f"compiled code: {replay_left:g} kernel(s) per step replayed from CUDA graphs could not be "
                     "matched to a provenance record: they stay on the line that replays the graph")
    if records.stale_frames:
        notes.append(f"compiled code: {records.stale_frames} provenance stack frame(s) name lines that no longer "
                     "hold the code they quote (a cached compilation of an earlier version of the file): left out")
    return notes


def _ms(us: float, n: int) -> float:
    return round(us / US_PER_MS / n, 4)


def _union(calls: list[tuple[int, float, float]]) -> float:
    return union_length((s, e) for _, s, e in calls)


def _waits(calls: list[tuple[int, float, float]], syncs: dict[int, list[Interval]]) -> float:
    """Time of the host's waits on the device that started inside the calls (union)."""
    hit = []
    for track, s, e in calls:
        spans = syncs.get(track)
        if spans:
            lo = bisect.bisect_left(spans, (s, s))
            hi = bisect.bisect_right(spans, (e, float("inf")))
            hit.extend(spans[lo:hi])
    return union_length(hit)


def _figures(trace: Trace, key: LineKey, w: _Work, n: int, gpu_observed: bool,
             syncs: dict[int, list[Interval]]) -> dict:
    path, line = key
    wall = _union(w.calls)
    by_track: dict[int, list[Interval]] = defaultdict(list)
    for t, s, e in w.calls:
        by_track[t].append((s, e))
    cpu_total = sum(union_length(ivs) for ivs in by_track.values())
    kernels = sum(1 for g in w.gpu if trace.kind[g] == Kind.KERNEL)
    copies = {d: {"count": 0, "bytes": 0} for d in ("h2d", "d2h", "d2d")}
    for g in w.gpu:
        if trace.kind[g] == Kind.MEMCPY:
            direction = copy_direction(trace, g)
            if direction in copies:
                copies[direction]["count"] += 1
                copies[direction]["bytes"] += max(0, trace.nbytes[g])
    for c in copies.values():
        c["count"] = int(round(c["count"] / n))
        c["bytes"] = int(round(c["bytes"] / n))

    def gpu_ms(rows: set) -> float | None:
        return _ms(union_length((trace.ts[g], trace.end(g)) for g in rows), n) if gpu_observed else None

    def most_called(kernels: dict) -> list[str]:
        return [name for name, _ in sorted(kernels.items(), key=lambda kv: (-kv[1], kv[0]))][:8]

    compiled = {
        "kernels": most_called(w.kernels),
        "backward_kernels": most_called(w.bwd_kernels),
        "fused_with": [{"file": p, "line": ln} for p, ln in sorted(w.fused_with)],
        "backward_fused_with": [{"file": p, "line": ln} for p, ln in sorted(w.backward_fused_with)],
        "shared_ms": _ms(_union(w.shared_calls), n),
        "shared_gpu_ms": gpu_ms(w.shared_gpu),
    }
    return {
        "file": path, "line": line, "precision": "compiled",
        "wall_ms": _ms(wall, n),
        "cpu_self_ms": _ms(min(wall, cpu_total), n),
        "cpu_total_ms": _ms(cpu_total, n),
        "count": int(round(len(w.calls) / n)),
        "gpu_ms": gpu_ms(w.gpu),
        "kernels": int(round(kernels / n)),
        "copies": copies,
        "sync_ms": _ms(_waits(w.calls, syncs), n),
        "backward_ms": _ms(_union(w.bwd_calls), n),
        "backward_gpu_ms": gpu_ms(w.bwd_gpu),
        "compiled": compiled,
    }


def merge_lines(lines: list[dict], compiled: list[dict]) -> list[dict]:
    """The report's lines with the compiled ones: a line that also has its own regions (it ran eager
    in the window too) keeps its figures and gets the compiled part as `compiled`."""
    by_key = {(d["file"], d["line"]): d for d in lines}
    out = list(lines)
    for c in compiled:
        own = by_key.get((c["file"], c["line"]))
        if own is None:
            out.append(c)
        else:
            own["compiled"] = {**c["compiled"], "wall_ms": c["wall_ms"], "gpu_ms": c["gpu_ms"],
                               "backward_ms": c["backward_ms"]}
    return out


def compile_events(doc: Any, resolver: FrameResolver) -> tuple[list[dict], list[dict]]:
    """The compilations torch made inside the window (the active steps), and every graph break it
    recorded, from a `compile.json` document; paths resolved like the kernels' (else as recorded)."""
    if not isinstance(doc, dict):
        return [], []

    def place(entry: dict) -> tuple[str | None, int | None]:
        path, line = entry.get("file"), entry.get("line")
        if not isinstance(path, str) or not isinstance(line, int):
            return None, None
        return resolve_recorded(path, resolver) or path, line

    compilations = []
    for c in doc.get("compiles") or []:
        if not isinstance(c, dict) or c.get("phase") != "active":
            continue
        path, line = place(c)
        reasons = [str(r) for r in c.get("reasons") or []][:5]
        compilations.append({"file": path, "line": line, "function": c.get("function"), "step": c.get("step"),
                             "phase": "active", "reasons": reasons,
                             "recompile": bool(c.get("frame_compile_id")) or bool(reasons)})
    breaks = []
    for b in doc.get("graph_breaks") or []:
        if not isinstance(b, dict):
            continue
        path, line = place(b)
        breaks.append({"file": path, "line": line, "reason": b.get("reason"), "detail": b.get("detail"),
                       "step": b.get("step"), "phase": str(b.get("phase"))})
    return compilations[:50], breaks[:50]
