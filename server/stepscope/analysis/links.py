"""Links inside one trace: which tracks are devices, which CPU call launched each GPU event.

Invariants:
- A GPU event (kernel, memcpy, memset) is linked to the runtime call with the same correlation id
  (CUDA, ROCm, and Triton launches through the driver API all carry one). Where no runtime call
  matches, the event is "unlinked": it still counts towards its step's completion (by its own
  start time) but is attributed to no line, and the report says how many there were.
- An unlinked event whose correlation id is below every runtime call's in the trace was launched
  before the trace's first launch call (`launched_before`): work the host queued before the window
  (it runs ahead of the device) that ran inside it. Correlation ids rise in launch order (CUPTI's
  and ROCm's alike), which is what makes that reading possible.
- The launch point of a linked GPU event is (track of the runtime call, start of the runtime call).
- A CPU track is any track that holds no device activity.
- Host waits (`sync_rows`) are the runtime calls that block the host until the device has done its
  earlier work: synchronize calls (`cuda*Synchronize`, `hip*Synchronize`, a blocking event query),
  and the calls of copies that cannot return before the device reaches them: a synchronous memcpy
  call (`cudaMemcpy`, `hipMemcpyWithStream`, ...), a device-to-host copy into memory that is not
  pinned, and a host-to-device copy from pageable memory (the driver synchronises the stream first).
  `blocking_copies` maps each such copy call to its GPU copy, and also the synchronize call that
  follows a copy call on its thread (within `COPY_SYNC_GAP_US`): the runtime synchronises after a
  blocking copy, and that wait belongs to the copy (`wait_kind`).
- The main track is the thread of the step markers; without them, the CPU track whose events (ops,
  annotations, Python frames) span the longest time; None when the trace has no CPU events at all.
- A track that holds both device events and the host's own (operators, annotations, frames, runtime
  calls) — a writer that put kernels on the CPU thread's pid/tid — is that CPU thread, not a device
  track (`shared_tracks`): its step markers are steps and its ops are the thread's; its device events
  are still GPU work (`gpu_rows` go by kind), not drawn as a stream of their own.
- Step markers drawn on a GPU stream (`gpu_user_annotation` `ProfilerStep#N`, one event per stream
  the step's work ran on) are kept apart in `gpu_step_rows`: they are read as steps only when no CPU
  thread holds a step marker (steps.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..trace import Kind, Trace

_DEVICE_KINDS = frozenset({Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.GPU_ANNOTATION, Kind.DEVICE_SYNC, Kind.DEVICE_OTHER})
_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_SYNC_CALL = re.compile(r"(Synchronize|EventQuery.*Block)", re.IGNORECASE)
_DIRECTION = re.compile(r"\b(HtoD|DtoH|DtoD|HtoH|PtoP|DtoA|AtoD)\b")
_MEMCPY_CALL = re.compile(r"memcpy", re.IGNORECASE)
#: a synchronize call that starts this close after a blocking copy's call, on its thread, is that copy's
COPY_SYNC_GAP_US = 100.0
_ASYNC_CALL = re.compile(r"async", re.IGNORECASE)
#: events only the host writes: a track that holds them is a CPU thread
_HOST_KINDS = (Kind.CPU_OP, Kind.ANNOTATION, Kind.PYTHON, Kind.RUNTIME)


@dataclass
class Links:
    device_tracks: set[int]
    gpu_rows: list[int]  # kernels, memcpys, memsets
    launch_row: dict[int, int]  # gpu row -> runtime row
    sync_rows: list[int]  # host calls that block on the device (see the module's invariants)
    step_rows: list[int]  # ProfilerStep#N on CPU tracks, by start time
    main_track: int | None = None  # the step markers' thread, else the longest-running CPU thread
    gpu_step_rows: list[int] = field(default_factory=list)  # ProfilerStep#N on GPU streams, by start time
    blocking_copies: dict[int, int] = field(default_factory=dict)  # runtime row of a blocking copy -> its GPU copy
    launched_before: int = 0  # unlinked GPU events launched before the trace's first launch call
    shared_tracks: set[int] = field(default_factory=set)  # CPU threads that also hold device events (see above)

    @property
    def unlinked(self) -> int:
        return len(self.gpu_rows) - len(self.launch_row)


def build_links(trace: Trace) -> Links:
    kinds = trace.kind
    device_rows = trace.rows(*_DEVICE_KINDS)
    device_tracks = {trace.track[i] for i in device_rows}
    # a track that holds device events and the host's own (kernels written on the CPU thread's pid/tid)
    shared = {trace.track[i] for i in trace.rows(*_HOST_KINDS)} & device_tracks if device_tracks else set()
    device_tracks -= shared
    gpu_rows = [i for i in device_rows if kinds[i] in Kind.GPU_WORK]
    names = trace.names
    sync_name_ids = frozenset(i for i, n in enumerate(names) if _SYNC_CALL.search(n))
    step_name_ids = frozenset(i for i, n in enumerate(names) if _STEP.match(n))
    runtime_by_corr: dict[int, int] = {}
    sync_rows: list[int] = []
    for i in trace.rows(Kind.RUNTIME):
        corr = trace.correlation[i]
        if corr >= 0 and corr not in runtime_by_corr:
            runtime_by_corr[corr] = i
        if trace.name[i] in sync_name_ids:
            sync_rows.append(i)
    marker_rows = trace.rows_named(step_name_ids)  # one scan of the name column for both kinds of marker
    step_rows = [i for i in marker_rows
                 if kinds[i] in (Kind.ANNOTATION, Kind.CPU_OP, Kind.OTHER) and trace.track[i] not in device_tracks]
    launch_row: dict[int, int] = {}
    blocking: dict[int, int] = {}
    for g in gpu_rows:
        corr = trace.correlation[g]
        r = runtime_by_corr.get(corr, -1) if corr >= 0 else -1
        if r >= 0:
            launch_row[g] = r
            if kinds[g] == Kind.MEMCPY and _blocks_host(trace, r, g):
                blocking[r] = g
    if blocking:
        known = set(sync_rows)
        sync_rows.extend(r for r in sorted(blocking) if r not in known)
        blocking.update(_syncs_after_copies(trace, sync_rows, blocking))
    first_launch = min(runtime_by_corr, default=None)
    launched_before = 0 if first_launch is None else sum(
        1 for g in gpu_rows if g not in launch_row and 0 <= trace.correlation[g] < first_launch)
    step_rows.sort(key=lambda r: trace.ts[r])
    step_rows = _dedupe_steps(trace, step_rows)
    gpu_step_rows = sorted((i for i in marker_rows if kinds[i] == Kind.GPU_ANNOTATION),
                           key=trace.ts.__getitem__)
    main_track = trace.track[step_rows[0]] if step_rows else _main_cpu_track(trace, device_tracks)
    return Links(device_tracks, gpu_rows, launch_row, sync_rows, step_rows, main_track, gpu_step_rows, blocking,
                 launched_before, shared)


def _syncs_after_copies(trace: Trace, waits: list[int], copies: dict[int, int]) -> dict[int, int]:
    """Synchronize calls that follow a blocking copy's call on its thread: sync row -> the GPU copy."""
    by_track: dict[int, list[int]] = {}
    for r in waits:
        by_track.setdefault(trace.track[r], []).append(r)
    out: dict[int, int] = {}
    for rows in by_track.values():
        rows.sort(key=trace.ts.__getitem__)
        for before, r in zip(rows, rows[1:]):
            if before in copies and r not in copies and 0 <= trace.ts[r] - trace.end(before) <= COPY_SYNC_GAP_US:
                out[r] = copies[before]
    return out


def wait_kind(trace: Trace, links: Links, row: int) -> str:
    """What a host wait waits for: `read` (a device-to-host copy: a value read back), `upload` (a
    host-to-device copy from pageable memory), `copy` (another blocking copy) or `sync` (a synchronize
    call of the program's own, or behind `.item()` where the copy itself did not block)."""
    copy = links.blocking_copies.get(row)
    if copy is None:
        return "sync"
    return {"d2h": "read", "h2d": "upload"}.get(copy_direction(trace, copy), "copy")


def _blocks_host(trace: Trace, call: int, copy: int) -> bool:
    """Whether the runtime call `call` of the GPU copy `copy` waits for the device (see the module's
    invariants): a synchronous memcpy call, or a copy to unpinned host memory or from pageable memory."""
    name = trace.label(call)
    if not _MEMCPY_CALL.search(name):
        return False  # a graph launch, a kernel launch: the copy runs inside other work
    if not _ASYNC_CALL.search(name):
        return True
    label = trace.label(copy)
    direction = copy_direction(trace, copy)
    if direction == "d2h":
        return "Pinned" not in label
    return direction == "h2d" and "Pageable" in label


def wait_words(trace: Trace, links: Links, row: int) -> str:
    """A host wait said with what it waits for: `cudaStreamSynchronize`, `cudaMemcpyAsync
    (device-to-host copy)`, `cudaMemcpyAsync (host-to-device copy from pageable memory)`."""
    name = trace.label(row)
    copy = links.blocking_copies.get(row)
    if copy is None:
        return name
    what = {"d2h": "device-to-host copy", "h2d": "host-to-device copy from pageable memory",
            "d2d": "device-to-device copy"}.get(copy_direction(trace, copy), "copy")
    if not _MEMCPY_CALL.search(name):
        return f"{name} (after a {what})"
    return f"{name} ({what})"


def _main_cpu_track(trace: Trace, device_tracks: set[int]) -> int | None:
    """The CPU thread whose ops, annotations and Python frames span the longest time (the thread
    that runs the loop spans it; an autograd or loader thread spans only its own bursts)."""
    first: dict[int, float] = {}
    last: dict[int, float] = {}
    ts_col, dur_col, track_col = trace.ts, trace.dur, trace.track
    for i in trace.rows(Kind.CPU_OP, Kind.ANNOTATION, Kind.PYTHON):
        t = track_col[i]
        if t in device_tracks:
            continue
        start, end = ts_col[i], ts_col[i] + dur_col[i]
        if t not in first:
            first[t], last[t] = start, end
        else:
            if start < first[t]:
                first[t] = start
            if end > last[t]:
                last[t] = end
    return max(first, key=lambda t: last[t] - first[t]) if first else None


def _dedupe_steps(trace: Trace, rows: list[int]) -> list[int]:
    """One row per step number (some traces repeat a step as cpu_op and user_annotation)."""
    seen: set[str] = set()
    out = []
    for r in rows:
        label = trace.label(r)
        if label in seen:
            continue
        seen.add(label)
        out.append(r)
    return out


def copy_direction(trace: Trace, row: int) -> str:
    """'h2d', 'd2h', 'd2d' or 'other' for a memcpy row (from its name, as every era writes it)."""
    m = _DIRECTION.search(trace.label(row))
    code = m.group(1) if m else ""
    return {"HtoD": "h2d", "DtoH": "d2h", "DtoD": "d2d", "PtoP": "d2d"}.get(code, "other")
