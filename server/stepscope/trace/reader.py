"""Read a Kineto / torch.profiler trace (`.json` or `.json.gz`) into the columnar `Trace`.

The file is read as a stream: the `traceEvents` array is decoded by orjson a slice at a time and
each slice's events are copied into compact columns, then dropped. Memory therefore stays near one
slice of decoded events plus the columns, whatever the file size.

How slices are cut (the one subtle part): a candidate cut is a `},` in the raw bytes. A cut is
accepted only if `[` + slice + `]` parses as JSON. A cut that falls inside a string or inside a
nested object leaves an unterminated string or unbalanced brackets, which never parses, so an
accepted cut is always between two top-level events. Invalid input is refused once the undecodable
span exceeds a bound, so bad input never makes the reader hold more than that bound.

Both layouts are read: `{"traceEvents": [...], <metadata>}` (metadata before and/or after the
events) and the bare array of early (2020) traces.
"""

from __future__ import annotations

import gc
import gzip
import os
import re
import zlib
from pathlib import Path
from typing import IO, Any, Iterator

import orjson

from ..errors import NotATraceError, UsageError
from .model import Kind, Trace, category_kind

READ_SIZE = 2 << 20  # bytes read per slice (small slices decode faster and keep memory low)
MAX_UNCUT = 256 << 20  # an event span this long with no valid cut means the JSON is broken
MAX_CUT_TRIES = 64  # candidate cuts tried per slice before reading more

_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_WS = b" \t\r\n"


def _open(path: Path) -> IO[bytes]:
    if not path.exists():
        raise UsageError(f"no such file: {path}")
    if path.is_dir():
        raise UsageError(f"is a folder, not a trace file: {path}")
    f = open(path, "rb")
    magic = f.read(2)
    f.seek(0)
    if magic == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=f, mode="rb")  # type: ignore[return-value]
    return f


class _Stream:
    """Reads the raw bytes, turning decompression errors into one-line reasons."""

    def __init__(self, path: Path):
        self.path = path
        self.f = _open(path)
        self.eof = False
        self.total = 0

    def read(self) -> bytes:
        if self.eof:
            return b""
        try:
            data = self.f.read(READ_SIZE)
        except EOFError:
            raise NotATraceError(f"{self.path}: compressed file is truncated") from None
        except (gzip.BadGzipFile, zlib.error, OSError) as e:
            raise NotATraceError(f"{self.path}: cannot decompress ({e})") from None
        if not data:
            self.eof = True
        self.total += len(data)
        return data

    def close(self) -> None:
        self.f.close()


def _try_array(body: bytes | bytearray | memoryview) -> list | None:
    try:
        value = orjson.loads(b"[" + bytes(body) + b"]")
    except orjson.JSONDecodeError:
        return None
    return value


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


class _Builder:
    """Copies decoded events into the columns of a `Trace` (interning names and tracks)."""

    def __init__(self, trace: Trace):
        self.t = trace
        self.name_ids: dict[str, int] = {}
        self.track_ids: dict[tuple, int] = {}
        self.kind_of: dict[str, int] = {}
        self.detail_ids: dict[bytes, int] = {}  # orjson text of (dims, types) -> name id

    def _name(self, name: Any) -> int:
        if name.__class__ is not str:
            name = "" if name is None else str(name)
        i = self.name_ids.get(name)
        if i is None:
            i = self.name_ids[name] = len(self.t.names)
            self.t.names.append(name)
        return i

    def _track_norm(self, norm: tuple) -> int:
        i = self.track_ids.get(norm)
        if i is None:
            i = len(self.t.tracks)
            self.t.tracks.append(norm)
            self.track_ids[norm] = i
        return i

    def merge(self, part: Trace) -> None:
        """Append a slice decoded into its own small `Trace` (ids remapped to this trace's tables)."""
        t = self.t
        name_map = [self._name(n) for n in part.names]
        track_map = [self._track_norm(k) for k in part.tracks]
        t.kind.extend(part.kind)
        t.name.extend(map(name_map.__getitem__, part.name))
        t.track.extend(map(track_map.__getitem__, part.track))
        t.ts.extend(part.ts)
        t.dur.extend(part.dur)
        t.correlation.extend(part.correlation)
        t.external_id.extend(part.external_id)
        t.sequence.extend(part.sequence)
        t.nbytes.extend(part.nbytes)
        absent_last = name_map + [-1]  # an absent detail (-1) indexes the last entry: stays -1
        t.stack.extend(map(absent_last.__getitem__, part.stack))
        t.shapes.extend(map(absent_last.__getitem__, part.shapes))
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

    def _track(self, pid: Any, tid: Any) -> int:
        key = (pid, tid)
        i = self.track_ids.get(key)
        if i is None:
            norm = (_norm_id(pid), _norm_id(tid))
            i = self.track_ids.get(norm)
            if i is None:
                i = len(self.t.tracks)
                self.t.tracks.append(norm)
                self.track_ids[norm] = i
            self.track_ids[key] = i
        return i

    def add(self, events: list) -> None:
        """Append one slice of decoded events. The hot loop: locals only, no per-event calls
        except where a value needs coercion (most ids are already ints). (Gathering each field
        with its own comprehension was measured slower: one pass over the events wins.)"""
        t = self.t
        kind_col, name_col, track_col = t.kind, t.name, t.track
        ts_col, dur_col = t.ts, t.dur
        corr_col, ext_col, seq_col, bytes_col = t.correlation, t.external_id, t.sequence, t.nbytes
        stack_col, shapes_col = t.stack, t.shapes
        detail_ids = self.detail_ids
        dumps = orjson.dumps
        skipped = t.skipped
        flows = t.flows
        kinds = self.kind_of
        name_ids = self.name_ids
        track_ids = self.track_ids
        CPU_OP, MEMCPY, MEMSET = Kind.CPU_OP, Kind.MEMCPY, Kind.MEMSET
        for e in events:
            if e.__class__ is not dict:
                skipped["?"] = skipped.get("?", 0) + 1
                continue
            ph = e.get("ph")
            if ph == "X":
                ts = e.get("ts")
                if ts.__class__ is not float and ts.__class__ is not int:
                    ts = _float_or_none(ts)
                    if ts is None:
                        skipped["X"] = skipped.get("X", 0) + 1
                        continue
                cat = e.get("cat")
                kind = kinds.get(cat) if cat.__class__ is str else Kind.OTHER
                if kind is None:
                    kind = kinds[cat] = category_kind(cat)
                args = e.get("args")
                corr = ext = seq = nbytes = stack = shapes = -1
                if args.__class__ is dict:
                    v = args.get("correlation")
                    if v is not None:
                        corr = v if v.__class__ is int else _int(v)
                    v = args.get("External id")
                    if v is None:
                        v = args.get("external id")
                    if v is not None:
                        ext = v if v.__class__ is int else _int(v)
                    if kind == CPU_OP:
                        v = args.get("Sequence number")
                        if v is not None:
                            seq = v if v.__class__ is int else _int(v)
                        v = args.get("Call stack")
                        if v is not None and v.__class__ is str:
                            stack = name_ids.get(v)
                            if stack is None:
                                stack = self._name(v)
                        v = args.get("Input Dims")
                        if v is not None:
                            # one compact text per distinct (dims, types): interned, formatted later
                            key = dumps([v, args.get("Input type")])
                            shapes = detail_ids.get(key)
                            if shapes is None:
                                shapes = detail_ids[key] = self._name(key.decode())
                    elif kind == MEMCPY or kind == MEMSET:
                        v = args.get("bytes")
                        if v is None:
                            v = args.get("size")
                        if v is not None:
                            nbytes = v if v.__class__ is int else _int(v)
                name = e.get("name")
                nid = name_ids.get(name) if name.__class__ is str else None
                if nid is None:
                    nid = self._name(name)
                tkey = (e.get("pid"), e.get("tid"))
                try:
                    tid_ = track_ids.get(tkey)
                except TypeError:  # a list or object as an id: keep its text
                    tkey = (_norm_id(tkey[0]), _norm_id(tkey[1]))
                    tid_ = track_ids.get(tkey)
                if tid_ is None:
                    tid_ = self._track(*tkey)
                dur = e.get("dur")
                if dur.__class__ is not float and dur.__class__ is not int:
                    dur = _float_or_none(dur) or 0.0
                kind_col.append(kind)
                name_col.append(nid)
                track_col.append(tid_)
                ts_col.append(ts)
                dur_col.append(dur if dur > 0 else 0.0)
                corr_col.append(corr)
                ext_col.append(ext)
                seq_col.append(seq)
                bytes_col.append(nbytes)
                stack_col.append(stack)
                shapes_col.append(shapes)
            elif (ph == "s" or ph == "f") and e.get("cat") == "fwdbwd":
                fid = _int(e.get("id"))
                ts = e.get("ts")
                if fid < 0 or ts is None:
                    continue
                flows.id.append(fid)
                flows.is_end.append(1 if ph == "f" else 0)
                flows.track.append(self._track(_norm_id(e.get("pid")), _norm_id(e.get("tid"))))
                flows.ts.append(float(ts))
            elif ph == "M":
                self._metadata_event(e)
            elif (ph == "i" or ph == "I") and e.get("name") == "[memory]" and self._memory_event(e):
                pass
            else:
                key = str(ph)
                skipped[key] = skipped.get(key, 0) + 1

    def _memory_event(self, e: dict) -> bool:
        """Keep one `[memory]` event; False (counted as skipped) when it lacks a time or a size."""
        args = e.get("args")
        ts = _float_or_none(e.get("ts"))
        if type(args) is not dict or ts is None or args.get("Bytes") is None:
            return False
        nbytes = _int(args.get("Bytes"))
        mem = self.t.memory
        mem.ts.append(ts)
        mem.track.append(self._track(_norm_id(e.get("pid")), _norm_id(e.get("tid"))))
        mem.nbytes.append(nbytes)
        mem.total_allocated.append(_int(args.get("Total Allocated")))
        device_type = _int(args.get("Device Type"))
        mem.device_type.append(device_type if -128 <= device_type < 128 else -1)
        mem.device_id.append(_int(args.get("Device Id")))
        return True

    def _metadata_event(self, e: dict) -> None:
        args = e.get("args")
        if type(args) is not dict:
            return
        label = args.get("name")
        if not isinstance(label, str):
            return
        if e.get("name") == "process_name":
            self.t.process_names[_norm_id(e.get("pid"))] = label
        elif e.get("name") == "thread_name":
            self.t.thread_names[(_norm_id(e.get("pid")), _norm_id(e.get("tid")))] = label


def _norm_id(v: Any) -> int | str:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str):
        s = v.strip()
        if s.lstrip("-").isdigit():
            return int(s)
        return s
    return "" if v is None else str(v)


def _float_or_none(v: Any) -> float | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if f == f and f not in (float("inf"), float("-inf")) else None


def _int(v: Any) -> int:
    if v is None:
        return -1
    if type(v) is int:
        return v
    try:
        return int(v)
    except (TypeError, ValueError):
        try:
            return int(str(v), 0)  # hex strings
        except (TypeError, ValueError):
            return -1


def _decode_part(raw: bytes) -> Trace:
    """Decode one slice of whole events into a small `Trace` (runs in a worker process)."""
    part = Trace(path=Path("."))
    try:
        events = orjson.loads(b"[" + raw + b"]")
    except orjson.JSONDecodeError as e:
        raise ValueError(f"invalid JSON: {e}") from None
    _Builder(part).add(events)
    return part


PARALLEL_MIN_BYTES = 48 << 20  # below this, starting worker processes costs more than it saves
MAX_WORKERS = 8
WORKER_BYTES = 40 << 20  # one worker's memory: an interpreter plus one decoded slice


def default_workers(path: Path) -> int:
    """Worker processes for a file: as many as cores allow while the whole read stays within
    twice the JSON's size (the parent keeps ~80 MB plus its columns, about a quarter of the JSON).
    `STEPSCOPE_TRACE_WORKERS=N` overrides."""
    forced = os.environ.get("STEPSCOPE_TRACE_WORKERS", "").strip()
    if forced.isdigit():
        return max(1, int(forced))
    size = _json_size(path)
    if size < PARALLEL_MIN_BYTES:
        return 1
    budget = 2 * size - (80 << 20) - size // 4
    return max(1, min(os.cpu_count() or 1, MAX_WORKERS, budget // WORKER_BYTES))


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
    stream = _Stream(path)
    pool: WorkerPool | None = None
    try:
        for what, payload in _iter_slices(stream, trace.metadata, trusted_cuts=trusted_cuts):
            if what == "raw":
                used["trusted_cuts"] = True
            if what == "events":
                if pool is not None:
                    for part in pool.drain():
                        builder.merge(part)
                builder.add(payload)
            elif n_workers <= 1:
                # straight into the trace's own columns: no slice-sized Trace to merge and remap
                try:
                    events = orjson.loads(b"[" + payload + b"]")
                except orjson.JSONDecodeError:
                    raise WorkerError("invalid JSON") from None
                builder.add(events)
                del events
            else:
                if pool is None:
                    pool = WorkerPool(n_workers)
                for part in pool.submit(payload):
                    builder.merge(part)
            del payload
        if pool is not None:
            for part in pool.drain():
                builder.merge(part)
    except WorkerError as e:
        if "JSON" in str(e):
            raise NotATraceError(f"{path}: invalid JSON in traceEvents (before byte {stream.total})") from None
        raise NotATraceError(f"{path}: {e} (before byte {stream.total})") from None
    except (OSError, MemoryError) as e:
        raise NotATraceError(f"{path}: cannot read ({e.__class__.__name__}: {e})") from None
    finally:
        stream.close()
        if pool is not None:
            pool.close()
    trace.size_bytes = stream.total
    if len(trace) == 0:
        raise NotATraceError(f"{path}: the trace holds no events (empty window)")
    return trace
