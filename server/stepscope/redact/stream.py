"""The byte level: read a trace's JSON text as a stream, find the strings that may need redacting,
and write the same text with those strings replaced.

Invariants:
- Only the contents of JSON strings change; every other byte is written as it was read, so the
  result has the same structure, numbers and layout as the input.
- Python-level work happens only at *trigger* positions: byte patterns (`@`, `/home/`, a known
  secret's text, ...) that every string needing a change contains. The patterns are searched
  chunk by chunk by `re` (C speed); each string found is decided once (`decide` is given the raw
  string and caches by it), so a name repeated 100 000 times costs a dictionary look-up per
  occurrence.
- A trigger never matches outside a string: the callers' patterns hold a character that JSON only
  allows inside strings (a letter other than those of `true`/`false`/`null`/exponents, `@`, `/`,
  `\\`, `~`, ...). So the string holding a trigger runs from the previous unescaped quote to the
  next one.
- Memory stays near two chunks plus the longest string: a chunk is written as soon as it is
  decided, up to a cut at a quote, and only the rest is carried into the next chunk.
"""

from __future__ import annotations

import os
import queue
import re
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable, Iterable, Iterator

try:  # the same streams, about 3x faster than the standard library's zlib (see trace/reader.py)
    from zlib_ng import zlib_ng as _zlib
except ImportError:  # pragma: no cover - platforms without its wheels
    import zlib as _zlib  # type: ignore[no-redef]

from ..errors import NotATraceError, StepscopeError, REFUSED, UsageError

CHUNK = 4 << 20  # bytes of JSON decided at a time
KEY_CONTEXT = 4096  # bytes before a string in which its key is looked for
MAX_STRING = 256 << 20  # a string longer than this is refused (the reader's bound on an event)
GZIP_LEVEL = 3  # zlib-ng level 3: within 15% of level 6's size at about 2x its speed
_EVENTS = re.compile(rb'"traceEvents"\s*:\s*\[')


# ---------------------------------------------------------------- reading

def _inflate(f: IO[bytes]) -> Iterator[bytes]:
    """gzip members in turn (a `cat a.gz b.gz` file too), checked as the reader checks them."""
    d = _zlib.decompressobj(_zlib.MAX_WBITS | 16)
    while True:
        if d.eof:
            data = d.unused_data or f.read(1 << 20)
            if not data.strip(b"\0"):
                return
            d = _zlib.decompressobj(_zlib.MAX_WBITS | 16)
        elif d.unconsumed_tail:
            data = d.unconsumed_tail
        else:
            data = f.read(1 << 20)
            if not data:
                raise EOFError
        out = d.decompress(data, CHUNK)
        if out:
            yield out


def json_chunks(path: Path) -> Iterator[bytes]:
    """The JSON text of a `.json` or `.json.gz` file (gzip known by its magic bytes), in chunks;
    a gzip file is inflated by a thread a few chunks ahead (inflating releases the GIL)."""
    with open(path, "rb") as f:
        compressed = f.read(2) == b"\x1f\x8b"
        f.seek(0)
        if not compressed:
            while data := f.read(CHUNK):
                yield data
            return
        q: queue.Queue = queue.Queue(maxsize=4)
        stop = threading.Event()

        def inflate() -> None:
            try:
                for out in _inflate(f):
                    while not stop.is_set():
                        try:
                            q.put(out, timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
                q.put(b"")
            except EOFError:
                q.put(NotATraceError(f"{path}: compressed file is truncated"))
            except (_zlib.error, OSError) as e:
                q.put(NotATraceError(f"{path}: cannot decompress ({e})"))

        thread = threading.Thread(target=inflate, name="stepscope-redact-inflate", daemon=True)
        thread.start()
        try:
            while True:
                item = q.get()
                if isinstance(item, Exception):
                    raise item
                if not item:
                    return
                yield item
        finally:
            stop.set()
            thread.join()


# ---------------------------------------------------------------- writing

class Output:
    """A new file written under a temporary name beside it and linked into place at `commit()`:
    the target is either absent or complete, and an existing file is never replaced (`link`
    fails if it exists). Gzip output is compressed by a thread while the next chunk is decided."""

    def __init__(self, target: Path, *, compress: bool):
        self.target = Path(target)
        fd, tmp = tempfile.mkstemp(dir=self.target.parent, prefix=f".{self.target.name}.", suffix=".tmp")
        self.tmp = Path(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # as any new file of the user's, not mkstemp's 0600
        self.f = os.fdopen(fd, "wb")
        self.size = 0
        self._queue: queue.Queue | None = None
        self._error: BaseException | None = None
        if compress:
            self._compressor = _zlib.compressobj(GZIP_LEVEL, _zlib.DEFLATED, _zlib.MAX_WBITS | 16)
            self._queue = queue.Queue(maxsize=4)
            self._thread = threading.Thread(target=self._compress, name="stepscope-redact-gzip", daemon=True)
            self._thread.start()

    def _compress(self) -> None:
        assert self._queue is not None
        try:
            while (data := self._queue.get()) is not None:
                self.f.write(self._compressor.compress(data))
            self.f.write(self._compressor.flush())
        except BaseException as e:  # raised by the writer's next call
            self._error = e
            while self._queue.get() is not None:
                pass

    def write(self, data: bytes) -> None:
        if not data:
            return
        self.size += len(data)
        if self._queue is None:
            self.f.write(data)
            return
        if self._error is not None:
            raise self._error
        self._queue.put(data)

    def _close(self) -> None:
        if self._queue is not None:
            self._queue.put(None)
            self._thread.join()
            self._queue = None
            if self._error is not None:
                raise self._error
        self.f.flush()
        os.fsync(self.f.fileno())
        self.f.close()

    def commit(self) -> None:
        try:
            self._close()
            os.link(self.tmp, self.target)
        except FileExistsError:
            raise StepscopeError(f"refusing to overwrite {self.target}", REFUSED) from None
        except OSError as e:
            raise UsageError(f"cannot write {self.target} ({e.strerror or e})") from None
        finally:
            self.discard()

    def discard(self) -> None:
        if self._queue is not None:
            self._queue.put(None)
            self._thread.join()
            self._queue = None
        if not self.f.closed:
            self.f.close()
        try:
            self.tmp.unlink()
        except FileNotFoundError:
            pass


# ---------------------------------------------------------------- finding and replacing strings

def _escaped(buf: bytes | bytearray, quote: int) -> bool:
    """Whether the quote at `quote` is escaped (an odd run of backslashes before it)."""
    n, i = 0, quote - 1
    while i >= 0 and buf[i] == 0x5C:
        n += 1
        i -= 1
    return n % 2 == 1


def _quote_before(buf: bytes | bytearray, pos: int, floor: int = 0) -> int:
    q = buf.rfind(b'"', floor, pos)
    while q >= 0 and _escaped(buf, q):
        q = buf.rfind(b'"', floor, q)
    return q


def _quote_after(buf: bytes | bytearray, pos: int) -> int:
    q = buf.find(b'"', pos)
    while q >= 0 and _escaped(buf, q):
        q = buf.find(b'"', q + 1)
    return q


_NAME_KEY_BEFORE = re.compile(rb'"name"\s*:\s*$')


def _before_key(buf: bytes | bytearray, q: int) -> int:
    """Move a cut at a quote off a key and its value: a cut on the quote that closes `"name"` or
    opens its value goes to the quote that opens the key, so `"name": "` is whole after the cut."""
    m = _NAME_KEY_BEFORE.search(bytes(buf[max(0, q - 64):q]))
    if m:
        return max(0, q - 64) + m.start()
    if buf[q - 5:q + 1] == b'"name"' and not _escaped(buf, q - 5):
        return q - 5
    return q


@dataclass
class Occurrence:
    """Where a string was first met: its byte offset in the JSON text, the key it is the value of
    (or the key of the array that holds it), and the index of its event in `traceEvents`."""

    offset: int
    key: str | None
    event: int | None


@dataclass
class Scan:
    """What one pass over the text met: per raw string that changed, its count and first place."""

    counts: dict[bytes, int] = field(default_factory=dict)
    first: dict[bytes, Occurrence] = field(default_factory=dict)
    json_bytes: int = 0


_KEY_BEFORE = re.compile(rb'"((?:[^"\\]|\\.)*)"\s*:\s*$')


def _key_of(buf: bytes | bytearray, opening: int) -> str | None:
    """The key whose value is the string opening at `opening`, looking back `KEY_CONTEXT` bytes; for an
    element of an array of strings (`"INFO": ["...", ...]`), the array's key."""
    floor = max(0, opening - KEY_CONTEXT)
    i = opening - 1
    while i >= floor and buf[i] in b" \t\r\n":
        i -= 1
    if i < floor:
        return None
    ch = buf[i]
    while ch == 0x2C:  # `,`: an earlier element; step over simple strings to the array's `[`
        q = _quote_before(buf, i, floor)
        if q < 0 or buf[q - 1:q] == b"\\":
            return None
        start = _quote_before(buf, q, floor)
        if start < 0:
            return None
        i = start - 1
        while i >= floor and buf[i] in b" \t\r\n":
            i -= 1
        if i < floor:
            return None
        ch = buf[i]
    if ch == 0x5B:  # `[`
        i -= 1
        while i >= floor and buf[i] in b" \t\r\n":
            i -= 1
        if i < floor or buf[i] != 0x3A:
            return None
    elif ch != 0x3A:  # `:`
        return None
    m = _KEY_BEFORE.search(bytes(buf[floor:i + 1]))
    if not m:
        return None
    try:
        import orjson

        return orjson.loads(b'"' + m.group(1) + b'"')
    except ValueError:
        return None


def rewrite(chunks: Iterable[bytes], triggers: Callable[[bytes | bytearray], Iterable[int]],
            decide: Callable[[bytes], bytes | None], write: Callable[[bytes], None] | None) -> Scan:
    """Pass the JSON text through, replacing the strings `decide` changes.

    `triggers(buf)` gives positions inside strings of `buf` that may need a change; `decide(raw)`
    gets the raw (still escaped) contents of such a string and returns the raw replacement, or None
    to leave it. `write` receives the output text (None: only scan). Returns what was met."""
    scan = Scan()
    counts, first = scan.counts, scan.first
    buf = bytearray()
    base = 0  # offset of buf[0] in the whole text
    events_start = -1  # offset of the first byte inside `"traceEvents": [` (or the bare array)
    ph_before = 0  # `"ph"` keys (one per event) in the text already passed
    it = iter(chunks)
    ended = False
    while not ended:
        data = next(it, b"")
        if data:
            buf += data
        else:
            ended = True
        if events_start < 0:
            m = _EVENTS.search(buf)
            if m:
                events_start = base + m.end()
            elif buf.lstrip()[:1] == b"[":
                events_start = base + buf.index(b"[") + 1
        # the cut: everything before it is decided now, the rest waits for the next chunk. It
        # sits on a quote at least four quotes and 4 KB from the end, so that a pattern spanning a
        # key and its value (`"name": "`) is whole in one of the two chunks, and a string keeps
        # its key in view.
        cut = len(buf)
        if not ended:
            q = len(buf)
            for _ in range(4):
                q = _quote_before(buf, q)
                if q < 0:
                    break
            if q > 0 and len(buf) > KEY_CONTEXT:
                q = min(q, _quote_before(buf, len(buf) - KEY_CONTEXT))
            if q > 0:
                q = _before_key(buf, q)
            if q <= 0:
                if len(buf) > MAX_STRING:
                    raise NotATraceError(f"a string longer than {MAX_STRING >> 20} MB")
                continue
            cut = q
        changes: list[tuple[int, int, bytes, bytes]] = []
        done = 0
        for p in sorted(set(triggers(buf))):
            if p < done or p >= cut:
                continue
            opening = _quote_before(buf, p)
            closing = _quote_after(buf, p)
            if opening < 0 or closing < 0:
                # the callers' patterns hold a character only strings have; a string open at the
                # cut ends after it, but the cut sits on a quote, so it was left for later
                raise NotATraceError("invalid JSON (a string is not closed)")
            raw = bytes(buf[opening + 1:closing])
            new = decide(raw)
            if new is not None:
                changes.append((opening, closing, raw, new))
            done = closing + 1
        out = bytearray()
        pos = 0
        for opening, closing, raw, new in changes:
            out += buf[pos:opening + 1]
            out += new
            pos = closing
            n = counts.get(raw)
            if n is not None:
                counts[raw] = n + 1
                continue
            counts[raw] = 1
            offset = base + opening
            event = None
            if 0 <= events_start <= offset:  # the event whose `"ph"` key comes before the string
                event = ph_before + buf.count(b'"ph"', 0, opening) - 1
            first[raw] = Occurrence(offset, _key_of(buf, opening), event if event is None or event >= 0 else None)
        out += buf[pos:cut]
        ph_before += buf.count(b'"ph"', 0, cut)
        if write is not None:
            write(bytes(out))
        scan.json_bytes += cut
        base += cut
        del buf[:cut]
    return scan
