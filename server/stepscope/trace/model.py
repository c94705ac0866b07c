"""The columnar trace model: one compact table per event family, names interned once.

Invariants:
- A `Trace` holds no per-event Python objects: every per-event field is an `array.array` column of
  the same length (`len(trace)`), indexed by the event's row number.
- Rows are complete events (`ph == "X"`) in file order; `kind` says which family a row belongs to
  (see `Kind`). Timestamps and durations are in microseconds, as Kineto writes them.
- Names (`name` column) are ids into `trace.names` (the symbol table); pid/tid pairs are ids into
  `trace.tracks`. Digit strings are read as integers, so a tid written `"25738"` and `25738` are
  the same track.
- Integer columns use -1 for "absent" (no correlation id, no sequence number, no byte count); a
  value beyond int64 (Kineto writes ids as uint64) is absent too, and counted (`ids_out_of_range`).
- Times are within ±MAX_TIME_US: a complete event whose `ts` or `dur` lies beyond it is left out
  and counted (`times_out_of_range`); a negative duration is read as 0 and counted
  (`negative_durations`), so a row's end is never before its start and never overflows. A `dur`
  that is there but no number ("NaN", "abc", true) is read as 0, counted and its first events named
  (`unreadable_durations`, `unreadable_examples`).
- Every row lies within IMPLAUSIBLE_US (a day) of the trace's median start, start and end: a row
  beyond it (ts and dur swapped, a corrupted time: no profile spans a day) is left out after the
  read, counted and its first events named (`implausible_times`, `implausible_examples`;
  `drop_implausible`), so one bad event cannot stretch a window or a figure by years.
- A document with a second `traceEvents` key has only its first array read; `later_event_array`
  holds how many events the other one had (None when there is none).
- Only the forward/backward flows (`fwdbwd`) are kept as flow links; launch flows (`ac2g`) are
  redundant with correlation ids.
- Optional per-op detail is interned like names: `stack` (the 1.9-era `Call stack` arg, as written)
  and `shapes` (input dims and types, as `orjson` text of `[dims, types]`) are ids into `names`, -1
  when the event does not carry them. Allocations (`[memory]` instant events) are a table of their
  own (`Memory`); an empty table means memory was not recorded, never that nothing was allocated.
"""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass, field
from itertools import compress
from pathlib import Path
from typing import Any

try:  # the compiled row indexes (_rows.c); without them, the Python lines below give the same rows
    from ._rows import rows_by_kind as _rows_by_kind, rows_in as _rows_in, rows_overlapping as _rows_overlapping
except ImportError:
    _rows_by_kind = _rows_in = _rows_overlapping = None


#: The largest |ts| and dur kept, in µs: 2**53, where a double stops holding every whole microsecond
#: (the year 2255 since the epoch). Beyond it a value is no time a profiler writes.
MAX_TIME_US = float(2**53)

#: An event that starts or ends further than this from the trace's median start is no event of the
#: recorded window (one day: no profile lasts that long; a `ts` and `dur` swapped put an event ~50
#: years away from the others).
IMPLAUSIBLE_US = 86_400e6
#: how many events a note names for each kind of event the reader left out or changed
NAMED_EVENTS = 3

#: The per-row columns of a `Trace`, in the order the column scanner (_columns.c) commits them.
ROW_COLUMNS = ("kind", "name", "track", "ts", "dur", "correlation", "external_id", "sequence", "nbytes", "stack",
               "shapes")


class Kind:
    """Event families, by the `cat` Kineto writes (every era's spelling)."""

    OTHER = 0
    CPU_OP = 1  # cpu_op / Operator: aten ops, autograd nodes
    ANNOTATION = 2  # user_annotation: record_function regions, ProfilerStep#N
    PYTHON = 3  # python_function: with_stack frames
    RUNTIME = 4  # cuda_runtime / cuda_driver / Runtime / *_runtime: host-side device API calls
    KERNEL = 5  # kernel / Kernel
    MEMCPY = 6  # gpu_memcpy / Memcpy
    MEMSET = 7  # gpu_memset / Memset
    GPU_ANNOTATION = 8  # gpu_user_annotation: record_function spans drawn on a stream
    DEVICE_SYNC = 9  # cuda_sync: device-side record of a synchronisation
    DEVICE_OTHER = 10  # device activity that is not CUDA/ROCm (e.g. MTIA command processor events)

    NAMES = {
        0: "other",
        1: "cpu_op",
        2: "annotation",
        3: "python_function",
        4: "runtime",
        5: "kernel",
        6: "memcpy",
        7: "memset",
        8: "gpu_annotation",
        9: "device_sync",
        10: "device_other",
    }

    #: kinds that are GPU work (time on a device stream)
    GPU_WORK = frozenset({KERNEL, MEMCPY, MEMSET})


CATEGORY_KIND: dict[str, int] = {
    "cpu_op": Kind.CPU_OP,
    "operator": Kind.CPU_OP,
    "user_annotation": Kind.ANNOTATION,
    "python_function": Kind.PYTHON,
    "cuda_runtime": Kind.RUNTIME,
    "cuda_driver": Kind.RUNTIME,
    "runtime": Kind.RUNTIME,
    "hip_runtime": Kind.RUNTIME,
    "privateuse1_runtime": Kind.RUNTIME,
    "xpu_runtime": Kind.RUNTIME,
    "mtia_runtime": Kind.RUNTIME,
    "kernel": Kind.KERNEL,
    "gpu_memcpy": Kind.MEMCPY,
    "memcpy": Kind.MEMCPY,
    "gpu_memset": Kind.MEMSET,
    "memset": Kind.MEMSET,
    "gpu_user_annotation": Kind.GPU_ANNOTATION,
    "cuda_sync": Kind.DEVICE_SYNC,
    "mtia_ccp_events": Kind.DEVICE_OTHER,
    # a PrivateUse1 backend's device events (IBM Spyre writes `aiu` for its kernels too)
    "privateuse1": Kind.DEVICE_OTHER,
    "aiu": Kind.DEVICE_OTHER,
}


def category_kind(cat: Any) -> int:
    if not isinstance(cat, str):
        return Kind.OTHER
    kind = CATEGORY_KIND.get(cat)
    if kind is None:
        kind = CATEGORY_KIND.get(cat.lower(), Kind.OTHER)
    return kind


@dataclass
class Flows:
    """Forward→backward links (`fwdbwd`): a start point in a forward op, an end point in a backward op."""

    id: array = field(default_factory=lambda: array("q"))
    is_end: array = field(default_factory=lambda: array("b"))
    track: array = field(default_factory=lambda: array("i"))
    ts: array = field(default_factory=lambda: array("d"))

    def __len__(self) -> int:
        return len(self.id)


@dataclass
class Memory:
    """`[memory]` instant events: one row per allocation (bytes > 0) or free (bytes < 0)."""

    ts: array = field(default_factory=lambda: array("d"))
    track: array = field(default_factory=lambda: array("i"))
    nbytes: array = field(default_factory=lambda: array("q"))
    total_allocated: array = field(default_factory=lambda: array("q"))  # -1 when not written
    device_type: array = field(default_factory=lambda: array("b"))  # 0 CPU, 1 CUDA, ... as Kineto writes it
    device_id: array = field(default_factory=lambda: array("q"))

    def __len__(self) -> int:
        return len(self.ts)


@dataclass
class Trace:
    """One trace file, read into columns. Build it with `stepscope.trace.read_trace`."""

    path: Path
    metadata: dict[str, Any] = field(default_factory=dict)  # top-level keys other than traceEvents
    names: list[str] = field(default_factory=list)  # symbol table
    tracks: list[tuple[int | str, int | str]] = field(default_factory=list)  # (pid, tid)
    process_names: dict[int | str, str] = field(default_factory=dict)
    thread_names: dict[tuple[int | str, int | str], str] = field(default_factory=dict)
    # one row per complete event
    kind: array = field(default_factory=lambda: array("b"))
    name: array = field(default_factory=lambda: array("i"))
    track: array = field(default_factory=lambda: array("i"))
    ts: array = field(default_factory=lambda: array("d"))
    dur: array = field(default_factory=lambda: array("d"))
    correlation: array = field(default_factory=lambda: array("q"))
    external_id: array = field(default_factory=lambda: array("q"))
    sequence: array = field(default_factory=lambda: array("q"))
    nbytes: array = field(default_factory=lambda: array("q"))
    stack: array = field(default_factory=lambda: array("i"))  # name id of the `Call stack` arg, or -1
    shapes: array = field(default_factory=lambda: array("i"))  # name id of `[dims, types]` text, or -1
    flows: Flows = field(default_factory=Flows)
    memory: Memory = field(default_factory=Memory)
    #: events of other phases, by phase ("i", "M", "s"/"f" launch flows, ...): counted, not kept
    skipped: dict[str, int] = field(default_factory=dict)
    #: complete events left out: a `ts` or `dur` beyond ±MAX_TIME_US
    times_out_of_range: int = 0
    #: complete events whose negative `dur` was read as 0
    negative_durations: int = 0
    #: integer ids and counts beyond int64 (correlation, External id, Sequence number, bytes, ...), read as absent
    ids_out_of_range: int = 0
    #: operators whose `Input Dims` were nested too deep to be shapes (hundreds of levels): read as absent
    shapes_too_deep: int = 0
    #: complete events whose `dur` is there but no number, read as 0; the first ones as (name, ts)
    unreadable_durations: int = 0
    unreadable_examples: list[tuple[str, float]] = field(default_factory=list)
    #: complete events left out for a time more than IMPLAUSIBLE_US from the others; the first as (name, ts, dur)
    implausible_times: int = 0
    implausible_examples: list[tuple[str, float, float]] = field(default_factory=list)
    #: the events of a second `traceEvents` array of the document (not read); None without one
    later_event_array: int | None = None
    size_bytes: int = 0  # bytes of JSON read (after decompression)
    _rows_by_kind: tuple | None = field(default=None, repr=False, compare=False)  # (rows, {kind: rows})

    def __len__(self) -> int:
        return len(self.ts)

    def rows(self, *kinds: int) -> list[int]:
        """Row numbers of the given kinds, in file order (a new list: callers may change it).

        The rows of each kind are found once (the analysis asks for the same kinds many times);
        the index is rebuilt if rows were added since."""
        by_kind = self._kind_index()
        if len(kinds) == 1:
            return list(by_kind.get(kinds[0], ()))
        return sorted(r for k in set(kinds) for r in by_kind.get(k, ()))

    def _kind_index(self) -> dict[int, array]:
        index = self._rows_by_kind
        if index is None or index[0] != len(self.kind):
            index = self._rows_by_kind = (len(self.kind), rows_by_kind(self.kind))
        return index[1]

    def rows_overlapping(self, kind: int, lo: float, hi: float, *, skip_tracks: set[int] | frozenset[int],
                         skip_names: set[int] | frozenset[int]) -> dict[int, list[int]]:
        """Rows of `kind` that overlap [lo, hi] (start <= hi, end >= lo), on tracks not in
        `skip_tracks` and with names not in `skip_names`, by track (in the order of each track's
        first row), each in file order."""
        rows = self._kind_index().get(kind, array("i"))
        if _rows_overlapping is None:
            return rows_overlapping_reference(self, rows, lo, hi, skip_tracks, skip_names)
        return _rows_overlapping(rows.tobytes(), self.ts.tobytes(), self.dur.tobytes(), lo, hi,
                                 self.track.tobytes(), _bitmap(skip_tracks, len(self.tracks)),
                                 self.name.tobytes(), _bitmap(skip_names, len(self.names)))

    def rows_named(self, name_ids: set[int] | frozenset[int]) -> list[int]:
        """Row numbers whose name id is in `name_ids`, in file order."""
        if _rows_in is None:
            return rows_named_reference(self.name, name_ids)
        return _rows_in(self.name.tobytes(), _bitmap(name_ids, len(self.names)))

    def rows_with(self, detail: array) -> list[int]:
        """Row numbers where a detail column (`stack`, `shapes`: name ids, -1 when absent) holds
        an id, in file order."""
        if _rows_in is None:
            return list(compress(range(len(detail)), map((-1).__lt__, detail)))
        return _rows_in(detail.tobytes(), b"\x01" * len(self.names))

    def end(self, row: int) -> float:
        return self.ts[row] + self.dur[row]

    def label(self, row: int) -> str:
        return self.names[self.name[row]]


def _bitmap(ids: set[int] | frozenset[int], n: int) -> bytes:
    """One byte per id below `n`: 1 for the ids given."""
    marks = bytearray(n)
    for i in ids:
        if 0 <= i < n:
            marks[i] = 1
    return bytes(marks)


def rows_overlapping_reference(trace: Trace, rows: array, lo: float, hi: float, skip_tracks: set[int] | frozenset[int],
                               skip_names: set[int] | frozenset[int]) -> dict[int, list[int]]:
    """`Trace.rows_overlapping` in Python, over the given rows."""
    ts, dur, track, name = trace.ts, trace.dur, trace.track, trace.name
    out: dict[int, list[int]] = {}
    for i in rows:
        if ts[i] <= hi and ts[i] + dur[i] >= lo and track[i] not in skip_tracks and name[i] not in skip_names:
            out.setdefault(track[i], []).append(i)
    return out


def rows_named_reference(ids: array, name_ids: set[int] | frozenset[int]) -> list[int]:
    """`Trace.rows_named` in Python: what the compiled index gives, and where it is not built."""
    return list(compress(range(len(ids)), map(name_ids.__contains__, ids)))


def rows_by_kind(kinds: array) -> dict[int, array]:
    """Each kind's row numbers, in file order, by ascending kind (4 bytes a row, not an int each)."""
    if _rows_by_kind is None:
        return rows_by_kind_reference(kinds)
    out: dict[int, array] = {}
    for kind, data in _rows_by_kind(kinds.tobytes()).items():
        out[kind] = rows = array("i")
        rows.frombytes(data)
    return out


def rows_by_kind_reference(kinds: array) -> dict[int, array]:
    """`rows_by_kind` in Python."""
    # one stable sort of the row numbers by kind (in C) leaves each kind's rows together and in
    # file order: measured 2-3x faster than appending row by row
    by_kind = sorted(range(len(kinds)), key=kinds.__getitem__)
    lists: dict[int, array] = {}
    start = 0
    for k, count in sorted(Counter(kinds.tobytes()).items()):  # kinds are 0..127
        lists[k] = array("i", by_kind[start : start + count])
        start += count
    return lists


def name_events(named: list, events) -> None:
    """Add to `named` the first of `events` until it names NAMED_EVENTS (what a note shows of them)."""
    for event in events:
        if len(named) >= NAMED_EVENTS:
            return
        named.append(event)


def drop_implausible(trace: Trace) -> None:
    """Leave out the rows that start or end more than IMPLAUSIBLE_US from the trace's median start
    (in place: the row columns are rebuilt without them), counting them and naming the first few.
    A trace whose events all lie within a day of each other (every real one) costs two passes over
    its columns."""
    n = len(trace)
    if n == 0:
        return
    ts, dur = trace.ts, trace.dur
    lowest, highest = min(ts), max(ts) + max(dur)
    if highest - lowest <= IMPLAUSIBLE_US:
        return
    starts = sorted(ts)
    middle = starts[n // 2]
    lo, hi = middle - IMPLAUSIBLE_US, middle + IMPLAUSIBLE_US
    keep = [lo <= t and t + d <= hi for t, d in zip(ts, dur)]
    dropped = keep.count(False)
    if not dropped:
        return
    trace.implausible_times += dropped
    name_events(trace.implausible_examples,
                ((trace.names[trace.name[r]], ts[r], dur[r]) for r in compress(range(n), (not k for k in keep))))
    for column in ROW_COLUMNS:
        values = getattr(trace, column)
        setattr(trace, column, array(values.typecode, compress(values, keep)))
    trace._rows_by_kind = None
