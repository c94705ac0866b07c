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
accepted cut is always between two top-level events. When no cheap candidate parses, the text is
walked once (jsonwalk.py): the walk finds the end of the last whole event, or the first invalid
byte, which is refused at once with its position and what it is. A pretty-printed file (what
Kineto writes) is cut without parsing, at its events' own newline-and-indent; a slice cut that way
that does not decode is cut again where the decoder proves it, in place (no re-read: the input may
be a pipe).

Invariants:
- The file is opened once and read front to back (a pipe or a FIFO gives its bytes only once).
- Time is linear in the input whatever it holds: every candidate cut is tried a bounded number of
  times, every walk of the same bytes happens after the buffer doubled.
- Memory is bounded whatever the input: the text held at once is at most a few slices plus one
  event (`MAX_EVENT_BYTES`); the trace itself is bounded by `Limits` (events, distinct names and
  their bytes), refused with `TraceTooLarge` beyond them, as it is read.
- Bad input raises one of the classes of errors.py, with a one-line reason and, for JSON, the byte
  position (of the uncompressed text) where it goes wrong.

Both layouts are read: `{"traceEvents": [...], <metadata>}` (metadata before and/or after the
events) and the bare array of early (2020) traces.
"""

from __future__ import annotations

import contextlib
import gc
import os
import queue
import re
import stat
import threading
from array import array
from dataclasses import dataclass
from itertools import compress, repeat
from operator import attrgetter, is_not
from pathlib import Path
from typing import IO, Any, Callable, Iterator

import orjson

try:  # the same streams, inflated about 3x faster than by the standard library (see _Inflater)
    from zlib_ng import zlib_ng as _zlib
except ImportError:  # a platform without its wheels: the standard library reads the same files
    import zlib as _zlib  # type: ignore[no-redef]

from .. import forking
from ..errors import (EmptyTrace, InvalidTraceJSON, NotAProfilerTrace, NotATraceError, NotJSON, ResourceError,
                      TraceTooLarge, TruncatedTrace, UsageError)
from ..textsafe import printable
from .events import UNREADABLE, Args, Event, InvalidJSON, as_int, decode_events, decode_string, norm_id
from .jsonwalk import Walk, describe, ends_where, walk
from .model import MAX_TIME_US, ROW_COLUMNS, Kind, Trace, category_kind, drop_implausible, name_events

try:  # the compiled column scanner (_columns.c); without it, the same rows come from _Builder.add
    from ._columns import ColumnScanner
except ImportError:  # not built here (no C compiler at install time)
    ColumnScanner = None

READ_SIZE = 2 << 20  # bytes read per slice (small slices decode faster and keep memory low)
MAX_EVENT_BYTES = 64 << 20  # one event, or the text before or after the events, longer than this is refused
MAX_CUT_TRIES = 8  # cheap candidate cuts tried per read before the text is walked
MAX_TAIL_TRIES = 8  # candidate ends of the event array decoded at the end of the file before it is walked
MAX_TAIL_CANDIDATES = 64  # ... of those checked (the text after them must end the document)
TAIL_WINDOW = 64 << 10  # ... among the last this many bytes

_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_WS = b" \t\r\n"
_LEADING_WS = re.compile(rb"[ \t\r\n]*")
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Limits:
    """What one read holds at most, so that reading and analysing stay within a stated memory
    bound: the analysis takes at most about 450 bytes per kept event and 1.6 KB per distinct name
    (measured: 340-370 and 1.1 KB), so with these limits at most about 3.5 GB (docs/trace-engine.md).
    `STEPSCOPE_MAX_EVENTS` / `STEPSCOPE_MAX_NAMES` change the first two."""

    events: int = 5_000_000  # complete events, flow points and memory events kept (~2 GB of Kineto's JSON)
    names: int = 500_000  # distinct names, call stacks and shapes
    name_bytes: int = 256 << 20  # characters of those names, together

    @classmethod
    def from_env(cls) -> Limits:
        def number(var: str, default: int) -> int:
            text = os.environ.get(var, "").strip().replace("_", "")
            return int(text) if text.isdigit() and int(text) > 0 else default

        return cls(events=number("STEPSCOPE_MAX_EVENTS", cls.events), names=number("STEPSCOPE_MAX_NAMES", cls.names))


def _is_regular(path: Path) -> bool:
    """Whether `path` is a regular file (not a pipe, FIFO or device: those are read once, front to
    back, without their size). Looked up without opening it."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _open(path: Path) -> tuple[IO[bytes], bytes]:
    """The file, opened once, and its first two bytes, already read (nothing seeks back: a pipe
    cannot)."""
    if not path.exists():
        raise UsageError(f"no such file: {path}")
    if path.is_dir():
        raise UsageError(f"is a folder, not a trace file: {path}")
    try:
        f = open(path, "rb")
    except PermissionError:
        raise UsageError(f"cannot open {path}: permission denied") from None
    except OSError as e:
        raise UsageError(f"cannot open {path}: {e.strerror or e}") from None
    try:
        return f, f.read(2)
    except OSError as e:
        f.close()
        raise ResourceError(path, f"cannot read ({e.strerror or e})") from None


class _Rewound:
    """A file read from its start, after its first bytes were read to tell what it is."""

    def __init__(self, f: IO[bytes], first: bytes):
        self.f, self.first = f, first

    def read(self, size: int) -> bytes:
        if not self.first:
            return self.f.read(size)
        first, self.first = self.first, b""
        return first + self.f.read(max(0, size - len(first)))


class _Inflater:
    """gzip decompression in large chunks (fewer, longer calls than `gzip.GzipFile`, each of
    which releases the GIL); concatenated members are read in turn and every member's CRC and
    length are checked. zlib-ng inflates the same streams about 3x faster than the standard
    library's zlib, which matters where every core is busy decoding (benchmarks/trace_speed.py)."""

    IN_CHUNK = 128 << 10

    def __init__(self, f: IO[bytes], first: bytes = b""):
        self.f, self.first = f, first
        self.d = _zlib.decompressobj(_zlib.MAX_WBITS | 16)

    def _input(self) -> bytes:
        if self.first:
            first, self.first = self.first, b""
            return first
        return self.f.read(self.IN_CHUNK)

    def read(self, size: int) -> bytes:
        while True:
            d = self.d
            if d.eof:
                # a member ended: what follows it is in unused_data (a member that ends while output
                # is limited also leaves it in unconsumed_tail, which an ended stream never consumes)
                data = d.unused_data or self._input()
                if not data.strip(b"\0"):
                    return b""  # the last member ended (trailing zero padding is allowed)
                self.d = d = _zlib.decompressobj(_zlib.MAX_WBITS | 16)
            elif d.unconsumed_tail:
                data = d.unconsumed_tail
            else:
                data = self._input()
                if not data:
                    raise EOFError("compressed file ended before the end-of-stream marker")
            out = d.decompress(data, size)
            if out:
                return out


class _Stream:
    """Reads the raw bytes, turning decompression errors into one-line reasons.

    A compressed file is inflated by a background thread a few chunks ahead of the reader (zlib
    releases the GIL, so inflating overlaps decoding on another core); at most `PREFETCH` chunks
    wait in memory. An error in the thread is raised by the `read` that reaches it. `total` counts
    the bytes of (uncompressed) text read so far: positions in reasons are offsets in that text."""

    PREFETCH = 4

    def __init__(self, path: Path):
        self.path = path
        self.f, first = _open(path)
        self.compressed = first == b"\x1f\x8b"
        self.source: Any = _Inflater(self.f, first) if self.compressed else _Rewound(self.f, first)
        self.eof = False
        self.total = 0
        self._queue: queue.Queue | None = None
        self._stop = threading.Event()
        if self.compressed:
            self._queue = queue.Queue(maxsize=self.PREFETCH)
            self._thread = threading.Thread(target=self._prefetch, name="stepscope-inflate", daemon=True)
            self._thread.start()

    def _read_chunk(self) -> bytes:
        try:
            return self.source.read(READ_SIZE)
        except EOFError:
            raise TruncatedTrace(self.path, self.total, "truncated: the compressed file ends before its gzip "
                                                        "stream does (compressed file is truncated)") from None
        except _zlib.error as e:
            raise NotATraceError(self.path, f"cannot decompress: the gzip data is corrupt ({e})") from None
        except OSError as e:
            raise ResourceError(self.path, f"cannot read ({e.strerror or e})") from None

    def _prefetch(self) -> None:
        assert self._queue is not None
        while not self._stop.is_set():
            try:
                item: bytes | BaseException = self._read_chunk()
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
            if isinstance(item, BaseException):
                self.eof = True
                raise item
            data = item
        if not data:
            self.eof = True
        self.total += len(data)
        return data

    def offset(self, buf: bytes | bytearray) -> int:
        """The position in the text of `buf[0]`, where `buf` holds the last bytes read."""
        return self.total - len(buf)

    def close(self) -> None:
        self._stop.set()
        if self._queue is not None:
            self._thread.join()
        self.f.close()


def _size(n: int) -> str:
    return f"{n >> 20} MB" if n >= 1 << 20 else f"{n >> 10} KB"


def _try_array(body: bytes | bytearray | memoryview) -> list[Event] | None:
    try:
        return decode_events(body)
    except InvalidJSON:
        return None


class _Slices:
    """The event array of a stream cut into slices of whole events. Iterating gives ("raw", bytes)
    slices cut by the file's layout, not yet decoded, and slices cut where a reading proved it:
    ("scanned", (bytes, result)) where `scan` (a column scanner's `scan`, which checks the JSON
    fully) read the slice, which the reader commits before `scan` is called again, else ("events",
    list) where the decoder did; at the end `metadata` holds the document's other top-level keys.

    `distrust(raw)`: the raw slice just given did not decode; it and the rest of the file are cut
    again, each cut proved by the decoder (nothing is read twice)."""

    def __init__(self, stream: _Stream, *, trusted_cuts: bool = True, scan: Callable[[bytes], Any] | None = None):
        self.stream, self.path = stream, stream.path
        self.trusted_cuts = trusted_cuts
        self.scan = scan
        self.metadata: dict[str, Any] = {}
        self.header: bytes | None = None  # the document's text before `"traceEvents": [`; None for a bare array
        self.later_events: int | None = None  # events of a later `traceEvents` key of the document (not read)
        self.header_at = 0  # its position in the text
        self._rejected: bytes | None = None

    def distrust(self, raw: bytes) -> None:
        self._rejected = raw

    def _read_whole(self, body: bytes | bytearray | memoryview) -> tuple[str, Any] | None:
        """`body` as a slice of whole events, or None when it is not one (a candidate cut inside a
        string or a nested value leaves text that neither the scanner nor the decoder reads). The
        scanner reads a slice only when it is valid JSON that it reads as the decoder does, and
        then its columns are already made: compact JSON, whose cuts must be proved, is read once."""
        if self.scan is not None:
            raw = bytes(body)
            scanned = self.scan(raw)
            if scanned is not None:
                return "scanned", (raw, scanned)
        events = _try_array(body)
        return None if events is None else ("events", events)

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        stream = self.stream
        buf = self._find_events()
        inside = b"[" if self.header is None else b"{["  # the containers open where the events start
        # A pretty-printed array separates its events by `},` + the same newline-and-indent that
        # precedes the first event. A raw newline never occurs inside a JSON string and nested
        # values are indented deeper, so that exact pattern is a safe cut without decoding.
        head = bytes(buf[:256])
        indent = head[: len(head) - len(head.lstrip(_WS))]
        trusted_cut = b"}," + indent + b"{" if self.trusted_cuts and b"\n" in indent else None
        retry_at = 0  # no cut is tried again before the buffer reaches this size (it doubles each time)
        closed = False  # the event array has closed: the rest is metadata, read at the end
        # 2. cut the array into slices of whole events
        while True:
            if self._rejected is not None:  # the consumer could not decode the last raw slice
                buf[:0] = self._rejected + b","
                self._rejected, trusted_cut, retry_at = None, None, 0
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
            if not closed and len(buf) >= retry_at:
                lead = _LEADING_WS.match(buf).end()  # whitespace between events is not kept
                if lead:
                    del buf[:lead]
                part, closed = self._cut(buf, inside)
                if part is not None:
                    retry_at = 0
                    yield part
                else:
                    retry_at = 2 * len(buf)
            if len(buf) > MAX_EVENT_BYTES:
                where = "after the event array" if closed else "without the end of an event"
                raise TraceTooLarge(self.path, "bytes in one event", MAX_EVENT_BYTES,
                                    f"more than {_size(MAX_EVENT_BYTES)} of text {where}, from byte "
                                    f"{stream.offset(buf)}: no profiler writes events that long")
        # 3. the rest: the last events, the closing bracket, and metadata written after the events
        yield from self._tail(buf, inside)

    def _find_events(self) -> bytearray:
        """Read up to where the event array starts: the text after its `[`."""
        stream, path = self.stream, self.path
        buf = bytearray()
        search_from = 0
        bom: bool | None = None  # whether the text starts with a byte order mark (None: not known yet)
        while True:
            data = stream.read()
            buf += data
            if bom is None:
                if len(buf) < len(_BOM) and data:
                    continue
                bom = buf.startswith(_BOM)
                if bom:  # a UTF-8 byte order mark: allowed before JSON text
                    del buf[: len(_BOM)]
                elif buf[:2] in (b"\xff\xfe", b"\xfe\xff"):
                    raise NotJSON(path, "UTF-16 text (it starts with a UTF-16 byte order mark), not the UTF-8 "
                                        "JSON of a trace")
            lead = _LEADING_WS.match(buf).end()
            if lead == len(buf):  # only whitespace so far: not kept
                if not data:
                    empty = stream.total == (len(_BOM) if bom else 0)
                    raise EmptyTrace(path, "empty file" if empty else "the file holds only whitespace")
                buf.clear()
                continue
            if buf[lead] == ord("["):
                self.header = None
                del buf[: lead + 1]
                return buf
            if buf[lead] != ord("{"):
                shown = printable(bytes(buf[lead : lead + 8]).decode("utf-8", "replace"))
                raise NotJSON(path, f"not JSON (a trace starts with '{{' or '[', this file with '{shown}')")
            if _LEADING_WS.match(data).end() < len(data):  # new text: look for the key (whitespace cannot hold it)
                m = _EVENTS_KEY.search(buf, search_from)
                if m:
                    self.header, self.header_at = bytes(buf[: m.start()]), stream.offset(buf)
                    del buf[: m.end()]
                    return buf
                # a key whose `[` has not arrived yet starts at its last `"traceEvents"`
                key = buf.rfind(b'"traceEvents"', search_from)
                search_from = key if key >= 0 else max(0, len(buf) - len(b'"traceEvents"'))
            if not data:  # the whole document is here: say what it is
                self._refuse_document(bytes(buf), stream.offset(buf))
            if len(buf) > MAX_EVENT_BYTES:
                raise NotAProfilerTrace(path, "document",
                                        reason=f"no traceEvents in the first {_size(MAX_EVENT_BYTES)}: "
                                               "not a profiler trace")

    def _refuse_document(self, text: bytes, at: int) -> None:
        """A whole document without `traceEvents`: not a trace, or not valid JSON (say where)."""
        try:
            doc = orjson.loads(text)
        except orjson.JSONDecodeError:
            self._raise_invalid(walk(text, big_ints=False), text, at, "in a document without traceEvents")
        raise NotAProfilerTrace(self.path, type(doc).__name__)

    def _cut(self, buf: bytearray, inside: bytes) -> tuple[tuple[str, Any] | None, bool]:
        """Cut the whole events at the front of `buf` off it: (the slice, as `_read_whole` gives
        it, whether the event array closes in `buf`), or (None, ...) when no event in it is whole yet."""
        cut_end = len(buf)
        for _ in range(MAX_CUT_TRIES):  # the last `},` is the end of an event, but for a slice read mid-event
            pos = buf.rfind(b"},", 0, cut_end)
            if pos < 0:
                break
            part = self._read_whole(memoryview(buf)[: pos + 1])
            if part is not None:
                del buf[: pos + 2]
                return part, False
            cut_end = pos
        # no cheap cut: walk the text (linear) for the end of its last whole event, or what is wrong
        text = bytes(buf)
        w = walk(text, inside=inside, document=False)
        if w.problem is not None and not w.problem.ends_early:
            self._raise_invalid(w, text, self.stream.offset(buf))
        rest = _LEADING_WS.match(buf, w.last_item).end() if w.last_item else len(buf)
        if rest == len(buf):  # no whole event yet, or what follows the last one has not been read
            return None, bool(w.closed)
        part = self._read_whole(text[: w.last_item])
        if part is None:
            self._raise_undecodable(text[: w.last_item], self.stream.offset(buf))
        del buf[: rest + (buf[rest] == ord(","))]  # the comma after the event; a `]` stays for the end
        return part, bool(w.closed)

    def _tail(self, buf: bytearray, inside: bytes) -> Iterator[tuple[str, Any]]:
        """The end of the file: the last events, the array's closing bracket, and what follows."""
        # the common case: the array closes at one of the last brackets, and the rest is the document's end
        end, floor, tries = len(buf), max(0, len(buf) - TAIL_WINDOW), 0
        for _ in range(MAX_TAIL_CANDIDATES):
            pos = buf.rfind(b"]", floor, end)
            if pos < 0 or tries == MAX_TAIL_TRIES:
                break
            end = pos
            rest = bytes(buf[pos + 1 :])
            if not self._ends_document(rest):
                continue
            tries += 1
            part = self._read_whole(memoryview(buf)[:pos])
            if part is None:
                continue
            meta = self._metadata(rest)
            if meta is None:
                break  # the text before the events is invalid: the walk below says where
            self.metadata.update(meta)
            yield part
            return
        # otherwise walk the text (linear): where the array closes, or what is wrong and where
        text, at = bytes(buf), self.stream.offset(buf)
        w = walk(text, inside=inside)
        if w.problem is not None:
            self._raise_invalid(w, text, at)
        close = w.closed[0]
        part = self._read_whole(text[:close])
        if part is None:
            self._raise_undecodable(text[:close], at)
        rest = text[close + 1 :]
        meta = self._metadata(rest)
        if meta is None:  # the text before the events (not walked above) is where it goes wrong
            assert self.header is not None
            placeholder = b'"traceEvents":[]'
            doc = self.header + placeholder + rest
            w = walk(doc, big_ints=False)  # as orjson reads it
            if w.problem is None or w.problem.position >= len(self.header) + len(placeholder):
                self._raise_undecodable(doc, self.header_at, where="around traceEvents")
            self._raise_invalid(w, doc, self.header_at, "before traceEvents")
        self.metadata.update(meta)
        yield part

    def _ends_document(self, rest: bytes) -> bool:
        """Whether `rest`, the text after a candidate end of the event array, ends the document
        (checked by a walk of that short text alone, before anything is decoded)."""
        if self.header is None:
            return not rest.strip(_WS)
        return walk(b'{"":0' + rest, big_ints=False).problem is None

    def _metadata(self, rest: bytes) -> dict[str, Any] | None:
        """The top-level keys of the document, given the text after the event array; None when
        that text does not end the document."""
        if self.header is None:
            return None if rest.strip(_WS) else {}
        try:
            doc = orjson.loads(self.header + b'"traceEvents":[]' + rest)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(doc, dict):
            return None
        later = doc.pop("traceEvents", None)
        if later != []:  # the document names traceEvents again after the array read: that one is not read
            self.later_events = len(later) if isinstance(later, list) else 0
        return doc

    def _raise_invalid(self, w: Walk, text: bytes, at: int, where: str | None = None) -> None:
        """Raise what `w.problem` says of `text` (which starts at position `at` of the file's text);
        `where` in the document it is, when not in or after the event array (by `w.closed`)."""
        problem = w.problem
        if problem is None:
            self._raise_undecodable(text, at)
            return
        if where is None:
            where = "after traceEvents" if w.closed and problem.position > w.closed[0] else "in traceEvents"
        position = at + problem.position
        of = " of its uncompressed text" if self.stream.compressed else ""
        if problem.ends_early:
            raise TruncatedTrace(self.path, position, f"truncated: the file ends at byte {position}{of} "
                                                      f"{ends_where(problem)}")
        raise InvalidTraceJSON(self.path, position, describe(text, problem), where=where, of=of)

    def _raise_undecodable(self, text: bytes, at: int, where: str = "in traceEvents") -> None:
        """The decoder refused a text the walk found valid: say where the text is, not why."""
        of = " of its uncompressed text" if self.stream.compressed else ""
        raise InvalidTraceJSON(self.path, at, "the decoder refuses this text", where=where, of=of)


def _iter_slices(stream: _Stream, meta: dict[str, Any], *, trusted_cuts: bool = True) -> Iterator[tuple[str, Any]]:
    """The slices of `stream` (see `_Slices`), filling `meta` with the top-level metadata at the end."""
    slices = _Slices(stream, trusted_cuts=trusted_cuts)
    yield from slices
    meta.update(slices.metadata)


class _Interner:
    """The symbol tables of one `Trace`: names (also call stacks and shapes) and tracks, each id
    given in order of first appearance."""

    def __init__(self, trace: Trace):
        self.names, self.tracks = trace.names, trace.tracks
        self.name_ids: dict[str, int] = {}
        self.track_ids: dict[tuple, int] = {}  # (pid, tid) as written, and normalised
        self.detail_ids: dict[bytes, int] = {}  # raw text of (dims, types) -> name id
        self.chars = 0  # characters of the names, together (bounded by Limits.name_bytes)

    def name(self, name: str) -> int:
        i = self.name_ids.get(name)
        if i is None:
            i = self.name_ids[name] = len(self.names)
            self.names.append(name)
            self.chars += len(name)
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
            # the decoder accepted this text, so it is valid JSON; nested past orjson's depth (no
            # shape is), it is no shape: `TOO_DEEP`, which the read makes absent (and counts)
            try:
                pair = [orjson.loads(dims_text), orjson.loads(types_text) if types_text else None]
                text = orjson.dumps(pair).decode()
            except (orjson.JSONDecodeError, orjson.JSONEncodeError, TypeError):
                text = TOO_DEEP
            sid = self.detail_ids[raw] = self.name(text)
        return sid


#: the name an op's input shapes get when nested too deep to be shapes (a NUL: never a JSON text);
#: once the trace is read, such ops have no shapes and are counted (`Trace.shapes_too_deep`)
TOO_DEEP = "\0shapes nested too deep"


def _drop_too_deep_shapes(trace: Trace, sid: int | None) -> None:
    if sid is None:
        return
    shapes = trace.shapes
    rows = [i for i, v in enumerate(shapes) if v == sid]
    for i in rows:
        shapes[i] = -1
    trace.shapes_too_deep = len(rows)


class _Builder:
    """Copies events into the columns of a `Trace` (interning names and tracks).

    Two paths give the same rows and ids. `add_raw` hands a slice of raw JSON to the compiled
    column scanner (_columns.c), which writes columns without a Python object per event. `add`
    copies events decoded by msgspec (events.py): complete events (`ph == "X"`, the bulk of a
    trace) a column at a time, one comprehension per field over the slice; the few other events
    (metadata, memory, flows) through a plain loop. `add_raw` falls back to `add` for a slice the
    scanner leaves to it (see _columns.c) and where the scanner is not built."""

    def __init__(self, trace: Trace, *, compiled: bool = True, limits: Limits | None = None):
        self.t = trace
        self.intern = intern = _Interner(trace)
        self.name_ids, self.track_ids, self.detail_ids = intern.name_ids, intern.track_ids, intern.detail_ids
        self.kind_of: dict[str | None, int] = {}
        self.scanner = self.new_scanner() if compiled and ColumnScanner is not None else None
        self.scanned_rows: list[list[bytes]] = [[] for _ in ROW_COLUMNS]  # per column: see finish()
        self.pending_rows = 0  # rows in scanned_rows
        self.limits = limits  # None: no bound (a worker's part; the reader that merges it checks)

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
        self.pending_rows += len(columns[0])  # the kind column: a byte a row
        flows = self.t.flows  # few: appended at once, after any flow handed back
        n = len(ROW_COLUMNS)
        for column, data in zip((flows.id, flows.is_end, flows.track, flows.ts), columns[n : n + 4]):
            column.frombytes(data)
        skipped = self.t.skipped
        for ph, count in columns[n + 4].items():
            skipped[ph] = skipped.get(ph, 0) + count
        out_of_range, negative = columns[n + 5]
        self.t.times_out_of_range += out_of_range
        self.t.negative_durations += negative
        self.check_limits()

    def check_limits(self) -> None:
        """Refuse the trace once it holds more than `limits` allow (checked after every slice, so
        the read stops within a slice of the bound)."""
        limits, t = self.limits, self.t
        if limits is None:
            return
        events = len(t.kind) + self.pending_rows + len(t.flows) + len(t.memory)
        if events > limits.events:
            raise TraceTooLarge(t.path, "events", limits.events,
                                f"more than {limits.events:,} events, the most one analysis holds (about 450 bytes "
                                "each): record fewer active steps, or raise STEPSCOPE_MAX_EVENTS if this machine "
                                "has the memory")
        if len(t.names) > limits.names:
            raise TraceTooLarge(t.path, "distinct names", limits.names,
                                f"more than {limits.names:,} distinct names (operators, frames, shapes), the most one "
                                "analysis holds (about 1.6 KB each): raise STEPSCOPE_MAX_NAMES if this machine has "
                                "the memory")
        if self.intern.chars > limits.name_bytes:
            raise TraceTooLarge(t.path, "bytes of names", limits.name_bytes,
                                f"more than {_size(limits.name_bytes)} of distinct names, the most one analysis "
                                "holds: no profiler writes names that long")

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
        self.pending_rows = 0

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
        t.times_out_of_range += part.times_out_of_range
        t.negative_durations += part.negative_durations
        t.ids_out_of_range += part.ids_out_of_range
        t.unreadable_durations += part.unreadable_durations
        name_events(t.unreadable_examples, part.unreadable_examples)
        self.check_limits()

    def add(self, events: list[Event]) -> None:
        """Append one slice of decoded events.

        Each field is gathered by one C-level pass over the slice (`map` of an `attrgetter`;
        measured faster than one loop appending to every column); Python-level loops visit only
        the rows that carry details (stacks, shapes, bytes)."""
        self.finish()
        complete = [e for e in events if e.ph == "X" and e.ts is not None]
        if len(complete) < len(events):
            self._add_others(events)
        if complete:
            self._add_complete(complete)
        self.check_limits()

    def _add_complete(self, complete: list[Event]) -> None:
        t = self.t
        durs = list(map(_DUR, complete))
        if UNREADABLE in durs:  # a `dur` that is no number: read as 0 µs, counted and named (found by identity)
            bad = [k for k, d in enumerate(durs) if d is UNREADABLE]
            t.unreadable_durations += len(bad)
            name_events(t.unreadable_examples, ((complete[k].name, complete[k].ts) for k in bad))
            for k in bad:
                durs[k] = 0.0
        known_durs = durs if None not in durs else [d for d in durs if d is not None]
        times = list(map(_TS, complete))
        if max(times) > MAX_TIME_US or min(times) < -MAX_TIME_US or max(known_durs, default=0.0) > MAX_TIME_US:
            # no time a profiler writes: left out, and counted for the report
            keep = [-MAX_TIME_US <= ts <= MAX_TIME_US and (d is None or d <= MAX_TIME_US) for ts, d in zip(times, durs)]
            t.times_out_of_range += keep.count(False)
            complete, times, durs = (list(compress(c, keep)) for c in (complete, times, durs))
            if not complete:
                return
        n = len(complete)
        cats = list(map(_CAT, complete))
        names = list(map(_NAME, complete))
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
        t.ts.extend(times)
        if None in durs or min(durs) < 0.0:
            t.negative_durations += sum(1 for d in durs if d is not None and d < 0.0)
            durs = [d if d is not None and d > 0.0 else 0.0 for d in durs]
        t.dur.extend(durs)
        if None in args:
            args = [_NO_ARGS if a is None else a for a in args]
        t.correlation.extend(self._int64(list(map(_CORRELATION, args))))
        ext = list(map(_EXTERNAL_ID, args))
        ext_old = list(map(_EXTERNAL_ID_OLD, args))
        seq = list(map(_SEQUENCE, args))
        call_stacks = list(map(_CALL_STACK, args))
        dims = list(map(_INPUT_DIMS, args))
        if any(map((-1).__ne__, ext_old)):  # the 1.x spelling, where the current one is absent
            ext = [e if e != -1 else o for e, o in zip(ext, ext_old)]
        t.external_id.extend(self._int64(ext))
        # sequence numbers belong to operators; bytes to copies and memsets
        if not {Kind.CPU_OP}.issuperset(compress(kind, map((-1).__ne__, seq))):
            seq = [s if k == Kind.CPU_OP else -1 for s, k in zip(seq, kind)]
        t.sequence.extend(self._int64(seq))
        byte_counts = _absent(n, "q")
        for row in compress(range(n), map(_COPY_KINDS.__contains__, kind)):
            a = args[row]
            byte_counts[row] = self._id(a.nbytes if a.nbytes != -1 else a.size)
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

    def _int64(self, values: list[int]) -> array:
        """`values` as an int64 column; a value beyond int64 (Kineto writes ids as uint64) is
        absent (-1), and counted."""
        try:
            return array("q", values)
        except OverflowError:
            return array("q", map(self._id, values))

    def _id(self, value: int) -> int:
        if _INT64_MIN <= value <= _INT64_MAX:
            return value
        self.t.ids_out_of_range += 1
        return -1

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
                if fid > _INT64_MAX:
                    self.t.ids_out_of_range += 1
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
        if not _INT64_MIN <= a.mem_bytes <= _INT64_MAX:
            self.t.ids_out_of_range += 1
            return False
        mem = self.t.memory
        mem.ts.append(e.ts)
        mem.track.append(self.intern.track(e.pid, e.tid))
        mem.nbytes.append(a.mem_bytes)
        mem.total_allocated.append(self._id(a.total_allocated))
        mem.device_type.append(a.device_type if -128 <= a.device_type < 128 else -1)
        mem.device_id.append(self._id(a.device_id))
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
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
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
    (1: none). A pipe or FIFO is read in this process only (its size is unknown, and nothing may
    open it a second time)."""
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
    """Bytes of JSON in the file; for gzip, the size its trailer records (modulo 4 GiB). 0 for
    anything but a regular file, which is not opened: a FIFO opened here would lose its bytes."""
    if not _is_regular(path):
        return 0
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


class _SliceFailed(Exception):
    """A slice cut by the file's layout did not decode in a thread or worker process, or a worker
    stopped: the file is read again in this process, where such a slice is cut again in place."""


def read_trace(path: Path | str, *, workers: int | None = None) -> Trace:
    """Read one trace file. Raises a `NotATraceError` / `UsageError` (a class per reason, see
    errors.py) or `ResourceError` with a one-line reason.

    `workers` > 1 decodes slices on that many threads or worker processes (default: by file size
    and cores; a pipe is read in this process); the result is identical to a single-process read,
    row for row.
    """
    path = Path(path)
    regular = _is_regular(path)
    n_workers = 1 if not regular else default_workers(path) if workers is None else max(1, workers)
    # Decoding makes millions of short-lived containers and no reference cycles: the cyclic
    # collector would only re-scan them (measured: about a fifth of the read). Refcounting frees them.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        try:
            return _read(path, n_workers, regular=regular)
        except _SliceFailed:
            # a layout cut led to JSON that does not decode (the JSON is broken, or the file indents
            # nested values like events), or a worker stopped: read again here, cutting in place
            return _read(path, 1, regular=regular)
        except MemoryError:
            raise ResourceError(path, "out of memory while reading the trace") from None
    finally:
        if gc_was_enabled:
            gc.enable()


def _read(path: Path, n_workers: int, *, regular: bool) -> Trace:
    from .workers import WorkerError, WorkerPool

    # a pipe or FIFO has no resolved name worth showing (/proc/<pid>/fd/pipe:[...]): keep the one given
    trace = Trace(path=path.resolve() if regular else Path(os.path.abspath(path)))
    builder = _Builder(trace, limits=Limits.from_env())
    with contextlib.ExitStack() as cleanup:  # closed in reverse: the stream, then threads or workers
        # With the compiled scanner, slices are scanned by threads (scan_threads.py); without it,
        # decoded by worker processes (workers.py). Workers that can be forked are forked now,
        # before the stream's inflating thread starts (no other thread may run at a fork); workers
        # started as interpreters wait for the first slice that needs them (a file without layout
        # cuts never does). Workers that cannot start leave the slices to this process.
        threads = pool = None
        if n_workers > 1 and builder.scanner is not None:
            from .scan_threads import ScanThreads  # here: small traces never need concurrent.futures

            threads = ScanThreads(builder, n_workers)
            cleanup.callback(threads.close)
        elif n_workers > 1 and forking.can_fork():
            try:
                pool = WorkerPool(n_workers)
                cleanup.callback(pool.close)
            except OSError:
                n_workers = 1
        stream = _Stream(path)
        cleanup.callback(stream.close)
        # cuts that must be proved (compact JSON) are proved by scanning the slice in this thread,
        # with a scanner of its own: the threads' scanners may hold slices in flight
        prover = None if builder.scanner is None else builder.scanner if threads is None else builder.new_scanner()
        slices = _Slices(stream, scan=None if prover is None else prover.scan)
        try:
            for what, payload in slices:
                if what != "raw":
                    if threads is not None:
                        threads.drain()
                    elif pool is not None:
                        for part in pool.drain():
                            builder.merge(part)
                    if what == "scanned":
                        builder.add_scanned(*payload, prover)
                    else:
                        builder.add(payload)
                    continue
                if threads is not None:
                    threads.add(payload)
                elif n_workers > 1:
                    if pool is None:
                        try:
                            pool = WorkerPool(n_workers)
                        except OSError:
                            n_workers = 1
                            builder.add_raw(payload)
                            continue
                        cleanup.callback(pool.close)
                    for part in pool.submit(payload):
                        builder.merge(part)
                else:
                    try:
                        builder.add_raw(payload)  # straight into the trace's own columns
                    except InvalidJSON:
                        slices.distrust(payload)  # cut it (and the rest) again where the decoder proves it
                del payload
            if threads is not None:
                threads.drain()
            elif pool is not None:
                for part in pool.drain():
                    builder.merge(part)
        except (InvalidJSON, WorkerError):
            raise _SliceFailed() from None  # only threads and workers get here (see above)
        except (InvalidTraceJSON, TruncatedTrace):
            if threads is None and pool is None:
                raise
            # the text after a bad layout cut (still in flight) can look broken: the read in this
            # process cuts in place, and says what is wrong if anything is
            raise _SliceFailed() from None
    builder.finish()
    _drop_too_deep_shapes(trace, builder.name_ids.get(TOO_DEEP))
    trace.metadata.update(slices.metadata)
    trace.later_event_array = slices.later_events
    trace.size_bytes = stream.total
    if len(trace) == 0:
        raise EmptyTrace(path, "the trace holds no events (empty window)")
    drop_implausible(trace)
    if len(trace) == 0:
        raise EmptyTrace(path, f"the trace holds no event of plausible time ({trace.implausible_times} left out: "
                               "they lie more than a day from each other)")
    return trace
