"""The byte level: read a trace's JSON text as a stream, decide every string in it, and write
the same text with the strings that change replaced.

Invariants:
- Every string of the text is decided — keys, names, arguments, metadata, whatever the reader
  makes of them — once per distinct raw (still escaped) form: the text is cut into strings at C
  speed (`split_strings`), a set keeps the distinct ones, and only a string not met before costs
  Python work. So what `--check` passes holds nothing `redact` would change, wherever it sits.
- A value is also judged by its key (`{"master_addr": "10.1.2.3"}`, `{"HF_TOKEN": "..."}`):
  keys that name a secret are found among the distinct strings, and only their values are looked
  up by position.
- Only the contents of JSON strings change; every other byte is written as it was read, so the
  result has the same structure, numbers and layout as the input.
- A piece of text is decided only up to the opening quote of a key (or of a string that follows
  no colon), so a key and its value are never in different pieces; the rest waits for the next
  chunk. Memory stays near two chunks plus the longest string, and the decisions kept: every
  string that changes, and up to `MAX_DECIDED` others.
"""

from __future__ import annotations

import os
import queue
import re
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable, Iterable, Iterator, Protocol

try:  # the same streams, about 3x faster than the standard library's zlib (see trace/reader.py)
    from zlib_ng import zlib_ng as _zlib
except ImportError:  # pragma: no cover - platforms without its wheels
    import zlib as _zlib  # type: ignore[no-redef]

from ..errors import NotATraceError, StepscopeError, REFUSED, UsageError

CHUNK = 4 << 20  # bytes of JSON decided at a time
KEY_CONTEXT = 4096  # bytes before a string in which its key is looked for
MAX_STRING = 256 << 20  # a string longer than this is refused (the reader's bound on an event)
MAX_DECIDED = 1 << 20  # distinct strings whose decision is kept (those that change are always kept)
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
        try:
            fd, tmp = tempfile.mkstemp(dir=self.target.parent, prefix=f".{self.target.name}.", suffix=".tmp")
        except OSError as e:
            raise UsageError(f"cannot write in {self.target.parent}: {(e.strerror or str(e)).lower()}") from None
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


# ---------------------------------------------------------------- cutting the text into strings

_BACKSLASHES_QUOTE = re.compile(rb'\\+"')
_ARRAY_OPEN = re.compile(rb"\s*:\s*\[\s*$")


def split_strings(text: bytes | bytearray) -> list[bytes]:
    """`[outside, string, outside, string, ..., outside]` of a JSON text: the raw contents of its
    strings at odd indexes, the text between them at even ones, so `b'"'.join(parts) == text`.
    An escaped quote (`\"`, after an odd run of backslashes) stays inside its string. If the text
    ends inside a string, the list has an even length and its last item is that string's start."""
    parts = bytes(text).split(b'"')
    if b'\\"' not in text:
        return parts
    escaped = [m.end() - 1 for m in _BACKSLASHES_QUOTE.finditer(text) if (m.end() - m.start() - 1) % 2 == 1]
    if not escaped:
        return parts
    after: list[int] = []  # for each escaped quote, the index of the part it ends
    prev = count = 0
    for pos in escaped:
        count += text.count(b'"', prev, pos)
        after.append(count)
        count += 1
        prev = pos + 1
    out: list[bytes] = []
    pos = j = 0
    while j < len(after):
        i = after[j]
        out.extend(parts[pos:i])
        merged = parts[i]
        k = i
        while j < len(after) and after[j] == k:
            merged += b'"' + parts[k + 1]
            k += 1
            j += 1
        out.append(merged)
        pos = k + 1
    out.extend(parts[pos:])
    return out


def _cut_index(parts: list[bytes], strict: bool = True) -> int:
    """The string at which to cut a buffer that has not ended, or -1: the last complete string
    but two that starts a key — it follows `{`, or a comma after a value that is not a string —
    so a key is never cut from its value, nor an array of strings from its key. Not `strict` (a
    buffer grown past bounds inside a long array of strings): any string after a comma."""
    complete = (len(parts) - 1) // 2  # strings closed in the buffer
    for k in range(complete - 2, -1, -1):
        before = parts[2 * k].rstrip()
        if before.endswith(b"{") or (before.endswith(b",") and (not strict or before.strip() != b",")):
            return k
    return -1


def _offset_of(parts: list[bytes], k: int, length: int) -> int:
    """The offset of string `k`'s opening quote in `b'"'.join(parts)` (of `length` bytes), counted
    from the end: a cut is near it."""
    return length - 1 - sum(map(len, parts[2 * k + 1:])) - (len(parts) - 2 - 2 * k)


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


class Decisions(Protocol):
    """What `rewrite` asks about the strings it meets (each raw string once per question)."""

    def decide(self, raw: bytes) -> bytes | None:
        """The raw replacement of a string, or None to leave it."""

    def key_role(self, raw: bytes) -> str | None:
        """The kind of secret a key names (`HF_TOKEN`: token), or None."""

    def decide_keyed(self, raw: bytes, role: str, key: bytes) -> bytes | None:
        """The raw replacement of a string held by a key of that role, or None."""


_FEW = 16  # this many distinct strings to place in a piece: each found by list.index, else one loop


def _indexes(strings: list[bytes], wanted: set[bytes]) -> dict[bytes, list[int]]:
    """Where each of `wanted` is in `strings`."""
    out: dict[bytes, list[int]] = {raw: [] for raw in wanted}
    if len(wanted) <= _FEW:
        for raw, found in out.items():
            k = -1
            try:
                while True:
                    k = strings.index(raw, k + 1)
                    found.append(k)
            except ValueError:
                pass
    else:
        for k, raw in enumerate(strings):
            if raw in wanted:
                out[raw].append(k)
    return out


def _values_of_key(parts: list[bytes], k: int) -> list[int]:
    """The strings that string `k` holds as a key: its value, or each string of its array."""
    after = 2 * k + 2
    if after >= len(parts):
        return []
    sep = parts[after]
    if sep.strip() == b":":
        return [k + 1]
    if not _ARRAY_OPEN.fullmatch(sep):
        return []
    values = [k + 1]
    while 2 * values[-1] + 2 < len(parts) - 1 and parts[2 * values[-1] + 2].strip() == b",":
        values.append(values[-1] + 1)
    return values


class _Pass:
    """One pass over the text: the decisions so far and what was met."""

    def __init__(self, plan: Decisions, write: Callable[[bytes], None] | None):
        self.plan = plan
        self.write = write
        self.scan = Scan()
        self.decided: dict[bytes, bytes | None] = {}
        self.changing: set[bytes] = set()
        self.sensitive: dict[bytes, str] = {}
        self.base = 0  # offset of the piece in the whole text
        self.events_start = -1  # offset of the first byte inside `"traceEvents": [` (or the bare array)
        self.ph_before = 0  # `"ph"` keys (one per event) in the text already passed

    def piece(self, parts: list[bytes], text: bytes) -> None:
        """Decide, count and write one piece of text (`parts` = `split_strings(text)`)."""
        strings = parts[1::2]
        distinct = set(strings)
        if len(self.decided) > MAX_DECIDED:  # a trace of countless distinct strings: forget those that stay
            self.decided = {raw: self.decided[raw] for raw in self.changing | self.sensitive.keys()}
        for raw in distinct.difference(self.decided):
            new = self.decided[raw] = self.plan.decide(raw)
            if new is not None:
                self.changing.add(raw)
            role = self.plan.key_role(raw)
            if role is not None:
                self.sensitive[raw] = role
        changed = distinct & self.changing
        keys = distinct & self.sensitive.keys()
        replaced: dict[int, tuple[bytes, bytes]] = {}  # string index -> (raw, replacement)
        if changed or keys:
            where = _indexes(strings, changed | keys)
            for key in keys:
                role = self.sensitive[key]
                for k in where[key]:
                    for v in _values_of_key(parts, k):
                        new = self.plan.decide_keyed(strings[v], role, key)
                        if new is not None:
                            replaced[v] = (strings[v], new)
            for raw in changed:
                new = self.decided[raw]
                for k in where[raw]:
                    replaced.setdefault(k, (raw, new))
        if replaced:
            out = self._replace(parts, text, replaced)
            if self.write is not None:
                self.write(b"".join(out))  # one copy of the piece, at C speed
        elif self.write is not None:
            self.write(text)
        self.ph_before += text.count(b'"ph"')
        self.scan.json_bytes += len(text)
        self.base += len(text)

    def _replace(self, parts: list[bytes], text: bytes, replaced: dict[int, tuple[bytes, bytes]]) -> list:
        """Count each replacement, note where each raw string is first met, and give the piece's
        text with the replacements spliced in (slices of `text` between them: no copy of the rest)."""
        counts, first = self.scan.counts, self.scan.first
        view = memoryview(text)
        out: list = []
        pos = 0  # where the text not yet given out starts
        at, offset = 0, len(parts[0])  # a string index and its opening quote's offset, carried forward
        for k in sorted(replaced):
            raw, new = replaced[k]
            offset += sum(map(len, parts[2 * at + 1: 2 * k + 1])) + 2 * (k - at)
            at = k
            out.append(view[pos:offset + 1])
            out.append(new)
            pos = offset + 1 + len(raw)
            n = counts.get(raw)
            counts[raw] = 1 if n is None else n + 1
            if raw not in first:
                event = None
                if 0 <= self.events_start <= self.base + offset:  # the event whose `"ph"` key comes before it
                    event = self.ph_before + text.count(b'"ph"', 0, offset) - 1
                first[raw] = Occurrence(self.base + offset, _key_of(text, offset),
                                        event if event is None or event >= 0 else None)
        out.append(view[pos:])
        return out


def rewrite(chunks: Iterable[bytes], plan: Decisions, write: Callable[[bytes], None] | None) -> Scan:
    """Pass the JSON text through, deciding every string and replacing those that change.

    `write` receives the output text (None: only scan). Returns what was met: per raw string
    replaced, how often and where first."""
    run = _Pass(plan, write)
    buf = b""
    it = iter(chunks)
    ended = False
    while not ended:
        data = next(it, b"")
        if data:
            buf += data
        else:
            ended = True
        if run.events_start < 0:
            m = _EVENTS.search(buf)
            if m:
                run.events_start = run.base + m.end()
            elif buf.lstrip()[:1] == b"[":
                run.events_start = run.base + buf.index(b"[") + 1
        parts = split_strings(buf)
        if ended:
            if len(parts) % 2 == 0:
                raise NotATraceError("invalid JSON (a string is not closed)")
            run.piece(parts, buf)
            break
        k = _cut_index(parts)
        if k < 0 and len(buf) > 16 * CHUNK:
            k = _cut_index(parts, strict=False)
        if k < 0:
            if len(buf) > MAX_STRING:
                raise NotATraceError(f"a string longer than {MAX_STRING >> 20} MB")
            continue
        cut = _offset_of(parts, k, len(buf))
        run.piece(parts[: 2 * k + 1], buf[:cut])
        buf = buf[cut:]
    return run.scan
