"""Read a Kineto / torch.profiler trace (`.json` or `.json.gz`) into the columnar `Trace`.

The file is read as a stream: the `traceEvents` array is cut into slices of whole events, and each
slice becomes rows of the columns, then is dropped: scanned straight into columns by the compiled
column scanner (_columns.c; on several threads for large files, scan_threads.py), or decoded into
compact typed records (events.py) that are copied into columns (the pure-Python path, the
reference: both give the same trace). Memory therefore stays near a few slices plus the columns,
whatever the file size.

How slices are cut (the one subtle part): a candidate cut is a `},` in the raw bytes. A cut is
accepted only if `[` + slice + `]` parses as JSON. A cut that falls inside a string or inside a
nested object leaves an unterminated string or unbalanced brackets, which never parses, so an
accepted cut is always between two top-level events. Invalid input is refused once the undecodable
span exceeds a bound, so bad input never makes the reader hold more than that bound.

Both layouts are read: `{"traceEvents": [...], <metadata>}` (metadata before and/or after the
events) and the bare array of early (2020) traces.
"""

from __future__ import annotations

import contextlib
import gc
import os
import queue
import re
import threading
from array import array
from itertools import compress, repeat
from operator import attrgetter, is_not
from pathlib import Path
from typing import IO, Any, Iterator

import orjson

try:  # the same streams, inflated about 3x faster than by the standard library (see _Inflater)
    from zlib_ng import zlib_ng as _zlib
except ImportError:  # a platform without its wheels: the standard library reads the same files
    import zlib as _zlib  # type: ignore[no-redef]

from .. import forking
from ..errors import NotATraceError, UsageError
from .events import Args, Event, InvalidJSON, as_int, decode_events, decode_string, norm_id
from .model import ROW_COLUMNS, Kind, Trace, category_kind

try:  # the compiled column scanner (_columns.c); without it, the same rows come from _Builder.add
    from ._columns import ColumnScanner
except ImportError:  # not built here (no C compiler at install time)
    ColumnScanner = None

READ_SIZE = 2 << 20  # bytes read per slice (small slices decode faster and keep memory low)
MAX_UNCUT = 256 << 20  # an event span this long with no valid cut means the JSON is broken
MAX_CUT_TRIES = 64  # candidate cuts tried per slice before reading more

_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_WS = b" \t\r\n"


def _open(path: Path) -> tuple[IO[bytes], bool]:
    """The file, and whether it is gzip-compressed."""
    if not path.exists():
        raise UsageError(f"no such file: {path}")
    if path.is_dir():
        raise UsageError(f"is a folder, not a trace file: {path}")
    f = open(path, "rb")
    magic = f.read(2)
    f.seek(0)
    return f, magic == b"\x1f\x8b"


class _Inflater:
    """gzip decompression in large chunks (fewer, longer calls than `gzip.GzipFile`, each of
    which releases the GIL); concatenated members are read in turn and every member's CRC and
    length are checked. zlib-ng inflates the same streams about 3x faster than the standard
    library's zlib, which matters where every core is busy decoding (benchmarks/trace_speed.py)."""

    IN_CHUNK = 128 << 10

    def __init__(self, f: IO[bytes]):
        self.f = f
        self.d = _zlib.decompressobj(_zlib.MAX_WBITS | 16)

    def read(self, size: int) -> bytes:
        while True:
            d = self.d
            if d.eof:
                # a member ended: what follows it is in unused_data (a member that ends while output
                # is limited also leaves it in unconsumed_tail, which an ended stream never consumes)
                data = d.unused_data or self.f.read(self.IN_CHUNK)
                if not data.strip(b"\0"):
                    return b""  # the last member ended (trailing zero padding is allowed)
                self.d = d = _zlib.decompressobj(_zlib.MAX_WBITS | 16)
            elif d.unconsumed_tail:
                data = d.unconsumed_tail
            else:
                data = self.f.read(self.IN_CHUNK)
                if not data:
                    raise EOFError("compressed file ended before the end-of-stream marker")
            out = d.decompress(data, size)
            if out:
                return out


class _Stream:
    """Reads the raw bytes, turning decompression errors into one-line reasons.

    A compressed file is inflated by a background thread a few chunks ahead of the reader (zlib
    releases the GIL, so inflating overlaps decoding on another core); at most `PREFETCH` chunks
    wait in memory. An error in the thread is raised by the `read` that reaches it."""

    PREFETCH = 4

    def __init__(self, path: Path):
        self.path = path
        self.f, compressed = _open(path)
        self.source: Any = _Inflater(self.f) if compressed else self.f
        self.eof = False
        self.total = 0
        self._queue: queue.Queue | None = None
        self._stop = threading.Event()
        if compressed:
            self._queue = queue.Queue(maxsize=self.PREFETCH)
            self._thread = threading.Thread(target=self._prefetch, name="stepscope-inflate", daemon=True)
            self._thread.start()

    def _read_chunk(self) -> bytes:
        try:
            return self.source.read(READ_SIZE)
        except EOFError:
            raise NotATraceError(f"{self.path}: compressed file is truncated") from None
        except (_zlib.error, OSError) as e:
            raise NotATraceError(f"{self.path}: cannot decompress ({e})") from None

    def _prefetch(self) -> None:
        assert self._queue is not None
        while not self._stop.is_set():
            try:
                item: bytes | Exception = self._read_chunk()
            except Exception as e:  # handed to the reader, raised there
                item = e
            while not self._stop.is_set():
                try:
                    self._queue.put(item, timeout=0.1)
                    break
                except queue.Full:
                    continue
            if not isinstance(item, bytes) or not item:
                return

    def read(self) -> bytes:
        if self.eof:
            return b""
        if self._queue is None:
            data = self._read_chunk()
        else:
            item = self._queue.get()
            if isinstance(item, Exception):
                self.eof = True
                raise item
            data = item
        if not data:
            self.eof = True
        self.total += len(data)
        return data

    def close(self) -> None:
        self._stop.set()
        if self._queue is not None:
            self._thread.join()
        self.f.close()


def _try_array(body: bytes | bytearray | memoryview) -> list[Event] | None:
    try:
        return decode_events(body)
    except InvalidJSON:
        return None


def _iter_slices(stream: _Stream, meta: dict[str, Any], *, trusted_cuts: bool = True) -> Iterator[tuple[str, Any]]:
    """Yield ("events", decoded list) or ("raw", bytes of whole events, not yet decoded); fill
    `meta` with the top-level metadata at the end."""
    buf = bytearray()
    # 1. find where the event array starts
    while True:
        data = stream.read()
        buf += data
        head = bytes(buf[:64]).lstrip(_WS + b"\xef\xbb\xbf")
        if not head and not data:
            raise NotATraceError(f"{stream.path}: empty file")
        if head[:1] == b"[":
            start = buf.index(b"[") + 1
            header: bytes | None = None
            break
        if head and head[:1] != b"{":
            raise NotATraceError(f"{stream.path}: not JSON (a trace starts with '{{' or '[')")
        m = _EVENTS_KEY.search(buf)
        if m:
            header = bytes(buf[: m.start()])
            start = m.end()
            break
        if not data or len(buf) > MAX_UNCUT:
            # the whole document is here (or too much without events): say what it is
            try:
                doc = orjson.loads(bytes(buf))
            except orjson.JSONDecodeError:
                if not data:
                    raise NotATraceError(f"{stream.path}: invalid or truncated JSON, and no traceEvents") from None
                raise NotATraceError(f"{stream.path}: no traceEvents in the first {MAX_UNCUT >> 20} MB") from None
            raise NotATraceError(f"{stream.path}: JSON {type(doc).__name__} without traceEvents: not a profiler trace")
    del buf[:start]
    # A pretty-printed array separates its events by `},` + the same newline-and-indent that
    # precedes the first event. A raw newline never occurs inside a JSON string and nested
    # values are indented deeper, so that exact pattern is a safe cut without decoding.
    head = bytes(buf[:256])
    indent = head[: len(head) - len(head.lstrip(_WS))]
    trusted_cut = b"}," + indent + b"{" if trusted_cuts and b"\n" in indent else None
    # 2. cut the array into slices of whole events
    while True:
        data = stream.read()
        if trusted_cut is not None and data:
            # the last cut of buf + data lies in data if data holds one (cuts do not overlap); the
            # slice is copied once, from the small rest of the previous chunk and this one
            pos = data.rfind(trusted_cut)
            if pos > 0 or (pos == 0 and buf):
                raw = b"".join((buf, memoryview(data)[: pos + 1]))
                buf[:] = memoryview(data)[pos + 2 :]
                yield "raw", raw
                continue
        buf += data
        if not data:
            break
        if trusted_cut is not None:
            pos = buf.rfind(trusted_cut)
            if pos > 0:
                raw = bytes(buf[: pos + 1])
                del buf[: pos + 2]
                yield "raw", raw
                continue
        cut_end = len(buf)
        events = None
        for _ in range(MAX_CUT_TRIES):
            pos = buf.rfind(b"},", 0, cut_end)
            if pos < 0:
                break
            events = _try_array(memoryview(buf)[: pos + 1])
            if events is not None:
                del buf[: pos + 2]
                break
            cut_end = pos
        if events is not None:
            yield "events", events
        elif len(buf) > MAX_UNCUT:
            raise NotATraceError(
                f"{stream.path}: invalid JSON in traceEvents (no decodable event within "
                f"{MAX_UNCUT >> 20} MB after byte {stream.total - len(buf)})"
            )
    # 3. the rest: the last events, the closing bracket, and metadata written after the events
    tail_tries = 0
    end = len(buf)
    while True:
        pos = buf.rfind(b"]", 0, end)
        if pos < 0 or tail_tries > 4096:
            raise NotATraceError(
                f"{stream.path}: truncated or invalid JSON (the traceEvents array is not closed)"
            )
        tail_tries += 1
        events = _try_array(memoryview(buf)[:pos])
        if events is not None:
            rest = bytes(buf[pos + 1 :])
            if header is None:
                if rest.strip(_WS):
                    end = pos
                    continue
            else:
                try:
                    doc = orjson.loads(header + b'"traceEvents":[]' + rest)
                except orjson.JSONDecodeError:
                    end = pos
                    continue
                if not isinstance(doc, dict):
                    end = pos
                    continue
                doc.pop("traceEvents", None)
                meta.update(doc)
            yield "events", events
            return
        end = pos


class _Interner:
    """The symbol tables of one `Trace`: names (also call stacks and shapes) and tracks, each id
    given in order of first appearance."""

    def __init__(self, trace: Trace):
        self.names, self.tracks = trace.names, trace.tracks
        self.name_ids: dict[str, int] = {}
        self.track_ids: dict[tuple, int] = {}  # (pid, tid) as written, and normalised
        self.detail_ids: dict[bytes, int] = {}  # raw text of (dims, types) -> name id

    def name(self, name: str) -> int:
        i = self.name_ids.get(name)
        if i is None:
            i = self.name_ids[name] = len(self.names)
            self.names.append(name)
        return i

    def track_norm(self, norm: tuple) -> int:
        i = self.track_ids.get(norm)
        if i is None:
            i = len(self.tracks)
            self.tracks.append(norm)
            self.track_ids[norm] = i
        return i

    def track(self, pid: Any, tid: Any) -> int:
        key = (pid, tid)
        i = self.track_ids.get(key)
        if i is None:
            i = self.track_norm((norm_id(pid), norm_id(tid)))
            self.track_ids[key] = i
        return i

    def track_json(self, pid: bytes, tid: bytes) -> int:
        """The track of a pid and tid given as their JSON text."""
        return self.track(orjson.loads(pid), orjson.loads(tid))

    def shapes(self, dims_text: bytes, types_text: bytes) -> int:
        """The name id of an op's `[dims, types]` (their raw JSON texts; types may be empty),
        interned as compact JSON text (formatted later)."""
        raw = dims_text + b"\0" + types_text
        sid = self.detail_ids.get(raw)
        if sid is None:
            # the decoder accepted this text, so it is valid JSON
            pair = [orjson.loads(dims_text), orjson.loads(types_text) if types_text else None]
            sid = self.detail_ids[raw] = self.name(orjson.dumps(pair).decode())
        return sid


class _Builder:
    """Copies events into the columns of a `Trace` (interning names and tracks).

    Two paths give the same rows and ids. `add_raw` hands a slice of raw JSON to the compiled
    column scanner (_columns.c), which writes columns without a Python object per event. `add`
    copies events decoded by msgspec (events.py): complete events (`ph == "X"`, the bulk of a
    trace) a column at a time, one comprehension per field over the slice; the few other events
    (metadata, memory, flows) through a plain loop. `add_raw` falls back to `add` for a slice the
    scanner leaves to it (see _columns.c) and where the scanner is not built."""

    def __init__(self, trace: Trace, *, compiled: bool = True):
        self.t = trace
        self.intern = intern = _Interner(trace)
        self.name_ids, self.track_ids, self.detail_ids = intern.name_ids, intern.track_ids, intern.detail_ids
        self.kind_of: dict[str | None, int] = {}
        self.scanner = self.new_scanner() if compiled and ColumnScanner is not None else None
        self.scanned_rows: list[list[bytes]] = [[] for _ in ROW_COLUMNS]  # per column: see finish()

    def new_scanner(self) -> Any:
        """A column scanner that interns into this builder's trace (scan_threads.py uses several)."""
        # the scanner calls the interner, which knows nothing of the builder: no reference cycle
        intern = self.intern
        return ColumnScanner(intern.name, intern.track_json, intern.shapes, category_kind, decode_string,
                             Kind.CPU_OP, (Kind.MEMCPY, Kind.MEMSET))

    def add_raw(self, raw: bytes) -> None:
        """Append one slice of whole events given as raw JSON (no brackets). Raises InvalidJSON."""
        scanner = self.scanner
        self.add_scanned(raw, None if scanner is None else scanner.scan(raw), scanner)

    def add_scanned(self, raw: bytes, handed: list | None, scanner: Any) -> None:
        """Append a slice `scanner` has scanned (`handed`: its result), or decode it the reference
        way when the scanner left it (None)."""
        if handed is None:
            self.add(decode_events(raw))
            return
        if handed:  # metadata and memory (and odd flows): few, decoded the reference way, first
            self._add_others(decode_events(b",".join([raw[start:end] for start, end in handed])))
        columns = scanner.commit()
        for chunks, data in zip(self.scanned_rows, columns):  # the rows: the first len(ROW_COLUMNS)
            chunks.append(data)
        flows = self.t.flows  # few: appended at once, after any flow handed back
        n = len(ROW_COLUMNS)
        for column, data in zip((flows.id, flows.is_end, flows.track, flows.ts), columns[n : n + 4]):
            column.frombytes(data)
        skipped = self.t.skipped
        for ph, count in columns[-1].items():
            skipped[ph] = skipped.get(ph, 0) + count

    def finish(self) -> None:
        """Append the rows scanned so far to the columns (before any other rows, and at the end).

        Scanned rows wait as one bytes object per column and slice, so each column grows once
        instead of once a slice: growing an array by a slice can copy all of it (measured: 4 % of
        a read at 148 MB, more as columns grow)."""
        chunks = self.scanned_rows
        if chunks[0]:
            for name, pending in zip(ROW_COLUMNS, chunks):
                getattr(self.t, name).frombytes(b"".join(pending))
                pending.clear()

    def merge(self, part: Trace) -> None:
        """Append a slice decoded into its own small `Trace` (ids remapped to this trace's tables;
        a column whose ids need no change, as tracks and absent details mostly do, is copied)."""
        self.finish()
        t = self.t
        name_map = [self.intern.name(n) for n in part.names]
        track_map = [self.intern.track_norm(k) for k in part.tracks]
        t.kind.extend(part.kind)
        t.name.extend(map(name_map.__getitem__, part.name))
        _extend_mapped(t.track, part.track, track_map)
        t.ts.extend(part.ts)
        t.dur.extend(part.dur)
        t.correlation.extend(part.correlation)
        t.external_id.extend(part.external_id)
        t.sequence.extend(part.sequence)
        t.nbytes.extend(part.nbytes)
        absent_last = name_map + [-1]  # an absent detail (-1) indexes the last entry: stays -1
        for column, details in ((t.stack, part.stack), (t.shapes, part.shapes)):
            if details.count(-1) == len(details):
                column.extend(details)
            else:
                column.extend(map(absent_last.__getitem__, details))
        mem, pmem = t.memory, part.memory
        mem.ts.extend(pmem.ts)
        mem.track.extend(map(track_map.__getitem__, pmem.track))
        mem.nbytes.extend(pmem.nbytes)
        mem.total_allocated.extend(pmem.total_allocated)
        mem.device_type.extend(pmem.device_type)
        mem.device_id.extend(pmem.device_id)
        t.flows.id.extend(part.flows.id)
        t.flows.is_end.extend(part.flows.is_end)
        t.flows.track.extend(map(track_map.__getitem__, part.flows.track))
        t.flows.ts.extend(part.flows.ts)
        t.process_names.update(part.process_names)
        t.thread_names.update(part.thread_names)
        for k, v in part.skipped.items():
            t.skipped[k] = t.skipped.get(k, 0) + v

    def add(self, events: list[Event]) -> None:
        """Append one slice of decoded events.

        Each field is gathered by one C-level pass over the slice (`map` of an `attrgetter`;
        measured faster than one loop appending to every column); Python-level loops visit only
        the rows that carry details (stacks, shapes, bytes)."""
        self.finish()
        complete = [e for e in events if e.ph == "X" and e.ts is not None]
        if len(complete) < len(events):
            self._add_others(events)
        if not complete:
            return
        t = self.t
        n = len(complete)
        cats = list(map(_CAT, complete))
        names = list(map(_NAME, complete))
        durs = list(map(_DUR, complete))
        args = list(map(_ARGS, complete))
        # new categories, names and tracks are interned in order of first appearance, so ids do
        # not depend on set order (reports are the same from run to run)
        kinds = self.kind_of
        for cat in dict.fromkeys(cats):
            if cat not in kinds:
                kinds[cat] = category_kind(cat)
        kind = array("b", map(kinds.__getitem__, cats))
        t.kind.extend(kind)
        name_ids = self.name_ids
        for name in dict.fromkeys(names):
            if name not in name_ids:
                self.intern.name(name)
        t.name.extend(map(name_ids.__getitem__, names))
        keys = [(e.pid, e.tid) for e in complete]
        track_ids = self.track_ids
        for key in dict.fromkeys(keys):
            if key not in track_ids:
                self.intern.track(*key)
        t.track.extend(map(track_ids.__getitem__, keys))
        t.ts.extend(map(_TS, complete))
        if None in durs or min(durs) < 0.0:
            durs = [d if d is not None and d > 0.0 else 0.0 for d in durs]
        t.dur.extend(durs)
        if None in args:
            args = [_NO_ARGS if a is None else a for a in args]
        t.correlation.extend(map(_CORRELATION, args))
        ext = list(map(_EXTERNAL_ID, args))
        ext_old = list(map(_EXTERNAL_ID_OLD, args))
        seq = list(map(_SEQUENCE, args))
        call_stacks = list(map(_CALL_STACK, args))
        dims = list(map(_INPUT_DIMS, args))
        if any(map((-1).__ne__, ext_old)):  # the 1.x spelling, where the current one is absent
            ext = [e if e != -1 else o for e, o in zip(ext, ext_old)]
        t.external_id.extend(ext)
        # sequence numbers belong to operators; bytes to copies and memsets
        sequence = array("q", seq)
        if not {Kind.CPU_OP}.issuperset(compress(kind, map((-1).__ne__, seq))):
            for row in compress(range(n), map((-1).__ne__, seq)):
                if kind[row] != Kind.CPU_OP:
                    sequence[row] = -1
        t.sequence.extend(sequence)
        byte_counts = _absent(n, "q")
        for row in compress(range(n), map(_COPY_KINDS.__contains__, kind)):
            a = args[row]
            byte_counts[row] = a.nbytes if a.nbytes != -1 else a.size
        t.nbytes.extend(byte_counts)
        # stacks and shapes of operators, interned like names
        stack, shapes = _absent(n, "i"), _absent(n, "i")
        for row in compress(range(n), map(is_not, call_stacks, repeat(None))):
            if kind[row] == Kind.CPU_OP:
                stack[row] = self.intern.name(call_stacks[row])
        detail_ids = self.detail_ids
        for row in compress(range(n), dims):  # a recorded shape is non-empty JSON text
            if kind[row] == Kind.CPU_OP:
                a = args[row]
                sid = detail_ids.get(bytes(a.input_dims) + b"\0" + bytes(a.input_type))
                shapes[row] = sid if sid is not None else self.intern.shapes(bytes(a.input_dims), bytes(a.input_type))
        t.stack.extend(stack)
        t.shapes.extend(shapes)

    def _add_others(self, events: list[Event]) -> None:
        """Flows, metadata and memory events; everything else is counted by phase as skipped."""
        skipped = self.t.skipped
        flows = self.t.flows
        for e in events:
            ph = e.ph
            if ph == "X":
                if e.ts is None:
                    skipped["X"] = skipped.get("X", 0) + 1
            elif (ph == "s" or ph == "f") and e.cat == "fwdbwd":
                fid = as_int(e.id)
                if fid < 0 or e.ts is None:
                    continue
                flows.id.append(fid)
                flows.is_end.append(1 if ph == "f" else 0)
                flows.track.append(self.intern.track(e.pid, e.tid))
                flows.ts.append(e.ts)
            elif ph == "M":
                self._metadata_event(e)
            elif (ph == "i" or ph == "I") and e.name == "[memory]" and self._memory_event(e):
                pass
            else:
                key = str(ph)
                skipped[key] = skipped.get(key, 0) + 1

    def _memory_event(self, e: Event) -> bool:
        """Keep one `[memory]` event; False (counted as skipped) when it lacks a time or a size."""
        a = e.args
        if a is None or e.ts is None or a.mem_bytes is None:
            return False
        mem = self.t.memory
        mem.ts.append(e.ts)
        mem.track.append(self.intern.track(e.pid, e.tid))
        mem.nbytes.append(a.mem_bytes)
        mem.total_allocated.append(a.total_allocated)
        mem.device_type.append(a.device_type if -128 <= a.device_type < 128 else -1)
        mem.device_id.append(a.device_id)
        return True

    def _metadata_event(self, e: Event) -> None:
        label = e.args.label if e.args is not None else None
        if not isinstance(label, str):
            return
        if e.name == "process_name":
            self.t.process_names[norm_id(e.pid)] = label
        elif e.name == "thread_name":
            self.t.thread_names[(norm_id(e.pid), norm_id(e.tid))] = label


_NO_ARGS = Args()
_CAT, _NAME, _TS, _DUR, _ARGS = (attrgetter(f) for f in ("cat", "name", "ts", "dur", "args"))
_CORRELATION, _EXTERNAL_ID, _EXTERNAL_ID_OLD, _SEQUENCE, _CALL_STACK, _INPUT_DIMS = (
    attrgetter(f) for f in ("correlation", "external_id", "external_id_old", "sequence", "call_stack", "input_dims"))
_COPY_KINDS = frozenset({Kind.MEMCPY, Kind.MEMSET})


def _extend_mapped(column: array, ids: array, mapping: list[int]) -> None:
    """Append `ids` translated through `mapping` (a straight copy when it maps every id to itself)."""
    if mapping == list(range(len(mapping))):
        column.extend(ids)
    else:
        column.extend(map(mapping.__getitem__, ids))


def _absent(n: int, typecode: str) -> array:
    """A column of n absent values (-1)."""
    return array(typecode, (-1,)) * n


def _decode_part(raw: bytes) -> Trace:
    """Decode one slice of whole events into a small `Trace` (runs in a worker process)."""
    part = Trace(path=Path("."))
    builder = _Builder(part)
    try:
        builder.add_raw(raw)
    except InvalidJSON as e:
        raise ValueError(f"invalid JSON: {e}") from None
    builder.finish()
    return part


PARALLEL_MIN_BYTES = 48 << 20  # below this, starting worker processes costs more than it saves
SCAN_THREADS_MIN_BYTES = 16 << 20  # below this, a file is a few slices: one thread scans it as fast
MAX_WORKERS = 8
MIN_CORES_FOR_WORKERS = 2
WORKER_BYTES = 40 << 20  # one started worker's memory: an interpreter plus one decoded slice
FORKED_WORKER_BYTES = 16 << 20  # a forked one shares the interpreter with the parent (measured: ~12 MB PSS)


def default_workers(path: Path) -> int:
    """Parallel decoders for a file. With the compiled scanner they are threads (scan_threads.py),
    one a core: cheap to start, a slice of memory each. Without it, worker processes: as many as
    cores allow (at least two from two cores on), while the whole read stays within twice the
    JSON's size (the parent keeps ~80 MB plus its columns, about a quarter of the JSON; a forked
    worker costs less than a started one, see workers.py). `STEPSCOPE_TRACE_WORKERS=N` overrides
    (1: none)."""
    forced = os.environ.get("STEPSCOPE_TRACE_WORKERS", "").strip()
    if forced.isdigit():
        return max(1, int(forced))
    cores = os.cpu_count() or 1
    size = _json_size(path)
    if cores < MIN_CORES_FOR_WORKERS:
        return 1
    if ColumnScanner is not None:
        return min(cores, MAX_WORKERS) if size >= SCAN_THREADS_MIN_BYTES else 1
    if size < PARALLEL_MIN_BYTES:
        return 1
    budget = 2 * size - (80 << 20) - size // 4
    per_worker = FORKED_WORKER_BYTES if forking.can_fork() else WORKER_BYTES
    return max(1, min(max(2, cores - 1), MAX_WORKERS, budget // per_worker))


def _json_size(path: Path) -> int:
    """Bytes of JSON in the file; for gzip, the size its trailer records (modulo 4 GiB)."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            if f.read(2) != b"\x1f\x8b":
                return size
            f.seek(-4, os.SEEK_END)
            recorded = int.from_bytes(f.read(4), "little")
    except OSError:
        return 0
    return recorded if recorded >= size else size * 10


def read_trace(path: Path | str, *, workers: int | None = None) -> Trace:
    """Read one trace file. Raises `NotATraceError` / `UsageError` with a one-line reason.

    `workers` > 1 decodes slices in that many worker processes (default: by file size and
    cores); the result is identical to a single-process read, row for row.
    """
    path = Path(path)
    n_workers = default_workers(path) if workers is None else max(1, workers)
    used: dict[str, bool] = {}
    # Decoding makes millions of short-lived containers and no reference cycles: the cyclic
    # collector would only re-scan them (measured: about a fifth of the read). Refcounting frees them.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _read(path, n_workers, trusted_cuts=True, used=used)
    except NotATraceError:
        if not used.get("trusted_cuts"):
            raise
        # A layout cut led to JSON that does not decode: either the JSON is broken, or the file
        # indents nested values like events. Read again cutting only where the JSON proves it.
        return _read(path, 1, trusted_cuts=False, used=used)
    finally:
        if gc_was_enabled:
            gc.enable()


def _read(path: Path, n_workers: int, *, trusted_cuts: bool, used: dict[str, bool]) -> Trace:
    from .workers import WorkerError, WorkerPool

    trace = Trace(path=path.resolve())
    builder = _Builder(trace)
    with contextlib.ExitStack() as cleanup:  # closed in reverse: the stream, then threads or workers
        # With the compiled scanner, slices are scanned by threads (scan_threads.py); without it,
        # decoded by worker processes (workers.py). Workers that can be forked are forked now,
        # before the stream's inflating thread starts (no other thread may run at a fork); workers
        # started as interpreters wait for the first slice that needs them (a file without layout
        # cuts never does).
        threads = pool = None
        if n_workers > 1 and builder.scanner is not None:
            from .scan_threads import ScanThreads  # here: small traces never need concurrent.futures

            threads = ScanThreads(builder, n_workers)
            cleanup.callback(threads.close)
        elif n_workers > 1 and forking.can_fork():
            try:
                pool = WorkerPool(n_workers)
            except OSError as e:
                raise NotATraceError(f"{path}: cannot start decoding workers ({e})") from None
            cleanup.callback(pool.close)
        stream = _Stream(path)
        cleanup.callback(stream.close)
        try:
            for what, payload in _iter_slices(stream, trace.metadata, trusted_cuts=trusted_cuts):
                if what == "events":
                    if threads is not None:
                        threads.drain()
                    elif pool is not None:
                        for part in pool.drain():
                            builder.merge(part)
                    builder.add(payload)
                    continue
                used["trusted_cuts"] = True
                if threads is not None:
                    threads.add(payload)
                elif n_workers <= 1:
                    builder.add_raw(payload)  # straight into the trace's own columns
                else:
                    if pool is None:
                        pool = WorkerPool(n_workers)
                        cleanup.callback(pool.close)
                    for part in pool.submit(payload):
                        builder.merge(part)
                del payload
            if threads is not None:
                threads.drain()
            elif pool is not None:
                for part in pool.drain():
                    builder.merge(part)
        except InvalidJSON:
            raise NotATraceError(f"{path}: invalid JSON in traceEvents (before byte {stream.total})") from None
        except WorkerError as e:
            if "JSON" in str(e):
                raise NotATraceError(f"{path}: invalid JSON in traceEvents (before byte {stream.total})") from None
            raise NotATraceError(f"{path}: {e} (before byte {stream.total})") from None
        except (OSError, MemoryError) as e:
            raise NotATraceError(f"{path}: cannot read ({e.__class__.__name__}: {e})") from None
    builder.finish()
    trace.size_bytes = stream.total
    if len(trace) == 0:
        raise NotATraceError(f"{path}: the trace holds no events (empty window)")
    return trace
