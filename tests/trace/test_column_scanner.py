"""The compiled column scanner (trace/_columns.c) reads every trace exactly like the reference path.

The reference is msgspec decoding plus `_Builder.add`; the scanner must give the same columns, the
same interned names and tracks with the same ids, and refuse the same invalid JSON. Its only
licence is to leave a slice to the reference ("bail"), which costs time, never meaning.
"""

from __future__ import annotations

import gc
import gzip
import json
import math
import weakref
from pathlib import Path

import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stepscope.trace import Trace, read_trace, reader
from stepscope.trace.model import ROW_COLUMNS
from stepscope.trace.events import InvalidJSON, decode_events

from tests import corpus

DATA = corpus.DATA
# the traces shipped with the tests, then the public ones: the same list wherever the checkout lies
TRACES = sorted(p for p in DATA.rglob("*.json*") if p.name not in corpus.NOT_TRACES) + corpus.public_files()


def test_the_scanner_is_built() -> None:
    # `pip install` builds it (setup.py); without it every read takes the 3-5x slower reference path
    assert reader.ColumnScanner is not None, "stepscope.trace._columns is not built: is a C compiler installed?"


def snapshot(trace: Trace) -> dict:
    """Everything a read produces, ids included (ids must not depend on the path taken)."""
    out = {name: list(getattr(trace, name)) for name in ROW_COLUMNS}
    out.update(names=trace.names, tracks=trace.tracks, skipped=trace.skipped, process_names=trace.process_names,
               thread_names=trace.thread_names, times_out_of_range=trace.times_out_of_range,
               negative_durations=trace.negative_durations, ids_out_of_range=trace.ids_out_of_range,
               unreadable_durations=trace.unreadable_durations, unreadable_examples=trace.unreadable_examples,
               flows=[list(getattr(trace.flows, c)) for c in ("id", "is_end", "track", "ts")],
               memory=[list(getattr(trace.memory, c)) for c in ("ts", "track", "nbytes", "total_allocated",
                                                                 "device_type", "device_id")])
    # -0.0 == 0.0: compare the signs of every time too
    out["ts_signs"] = [math.copysign(1, v) for v in out["ts"]]
    out["dur_signs"] = [math.copysign(1, v) for v in out["dur"]]
    return out


def read_body(pieces: list[bytes], *, compiled: bool) -> dict | type[Exception]:
    """The snapshot of reading these slices one way, or the type of exception it raised."""
    trace = Trace(path=Path("t"))
    builder = reader._Builder(trace, compiled=compiled)
    try:
        for piece in pieces:
            if compiled:
                builder.add_raw(piece)
            else:
                builder.add(decode_events(piece))
    except InvalidJSON as e:  # nothing else may escape (an id beyond int64 is absent, a time beyond 2**53 left out)
        return type(e)
    builder.finish()
    return snapshot(trace)


def scanned(pieces: list[bytes]) -> int:
    """How many of these slices the scanner reads itself (not left to the reference)."""
    builder = reader._Builder(Trace(path=Path("t")))
    count = 0
    for piece in pieces:
        if builder.scanner.scan(piece) is not None:
            builder.scanner.commit()
            count += 1
    return count


def event_array_body(data: bytes) -> bytes:
    """The raw text between the brackets of a trace's event array: the array closes at the last
    `]` after which the rest of the document (small: checked first) is still JSON and before which
    the events are."""
    m = reader._EVENTS_KEY.search(data)
    start = m.end() if m else data.index(b"[") + 1
    end = len(data)
    while True:
        end = data.rindex(b"]", start, end)
        rest = data[end + 1:]
        try:
            if m:
                orjson.loads(data[:m.start()] + b'"traceEvents": []' + rest)
            elif rest.strip():
                continue
            msgspec.json.decode(b"[" + data[start:end] + b"]")
            return data[start:end]
        except (orjson.JSONDecodeError, msgspec.DecodeError):
            continue


def slices(body: bytes, n: int) -> list[bytes]:
    """The body cut between events into about n slices (each event's bytes as written)."""
    events = msgspec.json.decode(b"[" + body + b"]", type=list[msgspec.Raw])
    step = max(1, -(-len(events) // n))
    return [b",".join(bytes(e) for e in events[i:i + step]) for i in range(0, len(events), step)] or [b""]


@pytest.mark.skipif(reader.ColumnScanner is None, reason="covered by test_the_scanner_is_built")
@pytest.mark.parametrize("path", corpus.params(TRACES, lambda p: p.name if DATA in p.parents else str(p.relative_to(corpus.PUBLIC))))
def test_every_trace_reads_the_same_as_the_reference(path: Path) -> None:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    body = event_array_body(data)
    for pieces in ([body], slices(body, 7)):
        reference = read_body(pieces, compiled=False)
        assert read_body(pieces, compiled=True) == reference
    # and the scanner really read them: no Kineto trace here needs the reference path (the traces made to
    # break the analysis are no Kineto trace: a `dur` written "NaN" is the reference's to read)
    if "robustness" not in path.parts:
        assert scanned(pieces) == len(pieces)


@pytest.mark.skipif(reader.ColumnScanner is None, reason="covered by test_the_scanner_is_built")
def test_a_large_trace_reads_the_same_through_the_whole_reader(tmp_path: Path, monkeypatch) -> None:
    source = next(p for p in TRACES if p.name == "trace.json.gz" and p.parent.name == "h200_async")
    monkeypatch.setattr(reader, "READ_SIZE", 16 << 10)  # many slices through read_trace
    compiled = read_trace(source, workers=1)
    assert scanned([event_array_body(gzip.decompress(source.read_bytes()))]) == 1
    monkeypatch.setattr(reader, "ColumnScanner", None)
    reference = read_trace(source, workers=1)
    assert snapshot(compiled) == snapshot(reference)
    assert len(compiled) > 500


@pytest.mark.skipif(reader.ColumnScanner is None, reason="covered by test_the_scanner_is_built")
@pytest.mark.parametrize("workers", [1, 2])
def test_compact_json_is_cut_and_read_by_the_scanner(tmp_path: Path, monkeypatch, workers: int) -> None:
    # one line of JSON: no layout cut, every cut proved by a reading; the scanner's reading is kept
    source = next(p for p in TRACES if p.name == "trace.json.gz" and p.parent.name == "h200_async")
    compact = tmp_path / "compact.json"
    compact.write_bytes(orjson.dumps(orjson.loads(gzip.decompress(source.read_bytes()))))
    monkeypatch.setattr(reader, "READ_SIZE", 16 << 10)  # many slices through read_trace
    decoded = []  # the slices read the reference way (a candidate cut inside an event reads neither way)

    def try_array(body):
        events = reference_try(body)
        if events is not None:
            decoded.append(len(events))
        return events

    reference_try = reader._try_array
    monkeypatch.setattr(reader, "_try_array", try_array)
    compiled = read_trace(compact, workers=workers)
    assert decoded == []
    monkeypatch.setattr(reader, "ColumnScanner", None)
    reference = read_trace(compact, workers=1)
    assert decoded  # the reference path proves its cuts by decoding
    assert snapshot(compiled) == snapshot(reference)
    assert snapshot(compiled) == snapshot(read_trace(source, workers=1))
    assert len(compiled) > 500


# Values chosen to hit every branch: odd types the reference coerces, escapes, extreme numbers.
NUMBERS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False), st.integers(-2**70, 2**70),
    st.sampled_from([0, -0.0, 0.0, 1e22, 1e23, 9007199254740993.0, 5085829912458.209, 1e-7, 2.5e-310, 1e308, 1e296,
                     -1e300, 2**53, 2**53 + 1, -(2**53), 9007199254740992.0, 2**63, 2**64 - 1, -(2**63) - 1, -5.5]))
STRINGS = st.one_of(st.text(max_size=12), st.sampled_from(["", "X", "cpu_op", "kernel", "Memcpy HtoD", "fwdbwd",
                                                           "[memory]", "ProfilerStep#3", "a\"b\\c", "naïve ✓", "\x01",
                                                           "\ud800", "a\udc00", "\U0001f600"]))
ODD = st.one_of(st.none(), st.booleans(), NUMBERS, STRINGS, st.lists(st.integers(), max_size=3),
                st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


def field(values):
    return st.one_of(values, ODD) if values is not None else ODD


ARGS = st.fixed_dictionaries({}, optional={
    "correlation": field(st.integers(-5, 2**64 + 5)), "External id": field(st.integers(-1, 99)),
    "external id": field(st.integers(-1, 99)), "Sequence number": field(st.integers(0, 9)),
    "Call stack": field(st.sampled_from(["train.py(3): step;lib.py(1): f", "x"])),
    "Input Dims": field(st.lists(st.lists(st.integers(0, 4), max_size=3), max_size=3)),
    "Input type": field(st.lists(st.sampled_from(["float", "Scalar", ""]), max_size=3)),
    "bytes": field(st.integers(0, 2**40)), "size": field(st.integers(0, 99)), "name": field(STRINGS),
    "Bytes": field(st.integers(-99, 99)), "Total Allocated": field(st.integers(0, 99)),
    "Device Type": field(st.integers(-1, 300)), "Device Id": field(st.integers(0, 9)), "other": ODD})
EVENT = st.fixed_dictionaries({}, optional={
    "ph": field(st.sampled_from(["X", "X", "X", "M", "s", "f", "i", "I", "C", "b"])),
    "cat": field(st.sampled_from(["cpu_op", "kernel", "gpu_memcpy", "gpu_memset", "user_annotation", "fwdbwd",
                                  "ac2g", "Kernel", "python_function"])),
    "name": field(st.sampled_from(["aten::mm", "thread_name", "process_name", "[memory]", "k"])),
    "pid": field(st.one_of(st.integers(-3, 3), st.sampled_from(["7", " 7", "Spans", "-1"]))),
    "tid": field(st.one_of(st.integers(0, 3), st.sampled_from(["stream 7", "3"]))),
    "ts": field(NUMBERS), "dur": field(NUMBERS), "id": field(st.integers(0, 5)), "args": field(ARGS),
    "extra": ODD})


def dump(event: object, ascii_only: bool, indent: int | None) -> bytes:
    # lone surrogates: escaped (ascii_only) or as the invalid UTF-8 bytes some writers produce
    return json.dumps(event, ensure_ascii=ascii_only, indent=indent).encode("utf-8", "surrogatepass")


@pytest.mark.skipif(reader.ColumnScanner is None, reason="covered by test_the_scanner_is_built")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(EVENT, max_size=12), st.booleans(), st.sampled_from([None, 0, 2]), st.integers(1, 4))
def test_any_events_read_the_same_as_the_reference(events, ascii_only, indent, n) -> None:
    pieces = [b",\n".join(dump(e, ascii_only, indent) for e in events[i::n]) for i in range(n)]
    assert read_body(pieces, compiled=True) == read_body(pieces, compiled=False)


VALID = (b'{"ph": "X", "cat": "cpu_op", "name": "a\\u00e9", "pid": 1, "tid": "t", "ts": 1.5e3, "dur": 2,'
         b' "args": {"External id": 3, "Input Dims": [[1, 2]], "deep": [{"x": [true, false, null]}]}},'
         b' {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 2, "args": {"Bytes": 8}}')


@pytest.mark.skipif(reader.ColumnScanner is None, reason="covered by test_the_scanner_is_built")
@settings(max_examples=400, deadline=None)
@given(st.integers(0, len(VALID) - 1), st.sampled_from([b"", b"}", b"]", b",", b'"', b"\\", b"\x01", b"0", b"-",
                                                        b".", b"e", b"tru", b"\xff", b"\xc3", b"{", b"[", b" ",
                                                        b"NaN", b"\\u12", b"01"]),
       st.integers(0, 3))
def test_damaged_json_is_refused_or_read_exactly_like_the_reference(at, insert, cut) -> None:
    body = VALID[:at] + insert + VALID[at + cut:]
    outcome = read_body([body], compiled=True)
    assert outcome == read_body([body], compiled=False)


@pytest.mark.skipif(reader.ColumnScanner is None, reason="covered by test_the_scanner_is_built")
def test_invalid_json_is_refused_and_deep_nesting_left_to_the_reference() -> None:
    for body in (b'{"ph": "X",}', b'{"ph": "X"} {"ph": "X"}', b'{"ph": "X"},', b'{"ph": "X", "ts": 01}',
                 b'{"ph": "X", "name": "\x01"}', b'{"ph": "X", "ts": 1.}', b'{"ph": "X", "a": tru}',
                 b'{"ph": "X", "name": "\xff"}', b'{"ph": "\\ud800x"}', b'{"ph": "X", "ts": 1, "name": "a\\ud800b"}',
                 b'{"ph": "X", "ts": 1, "tid": "\\udc00"}', b'{"ph": "X", "ts": 1, "name": "\\ud800\\ud800"}',
                 b'{"ph": "X", "ts": 1, "cat": "cpu_op", "args": {"Call stack": "x\\ud800"}}'):
        assert read_body([body], compiled=True) is InvalidJSON, body
    not_an_object = read_body([b'[1], {"ph": "X", "ts": 1}'], compiled=True)  # valid JSON: counted, not read
    assert not_an_object == read_body([b'[1], {"ph": "X", "ts": 1}'], compiled=False)
    assert not_an_object["skipped"] == {"?": 1} and len(not_an_object["ts"]) == 1
    deep = b'{"ph": "X", "ts": 1, "args": {"x": ' + b"[" * 300 + b"]" * 300 + b"}}"
    assert scanned([deep]) == 0  # more than the scanner nests: the reference reads it
    assert read_body([deep], compiled=True) == read_body([deep], compiled=False)


def test_a_read_trace_is_freed_when_dropped(tmp_path: Path) -> None:
    # the scanner calls back into its builder (a reference cycle): nothing may keep the trace alive
    path = tmp_path / "t.json"
    path.write_bytes(b'{"traceEvents": [\n  ' + b",\n  ".join(
        b'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": %d, "dur": 1}' % i for i in range(50))
        + b"\n]}")
    trace = read_trace(path)
    ref = weakref.ref(trace)
    gc.disable()
    try:
        del trace
        assert ref() is None
    finally:
        gc.enable()


@pytest.mark.skipif(reader.ColumnScanner is None, reason="covered by test_the_scanner_is_built")
def test_tracks_of_flows_and_memory_events_are_interned_in_file_order() -> None:
    flow = '{"ph": "%s", "cat": "fwdbwd", "id": %d, "pid": 1, "tid": %s, "ts": %d}'
    memory = '{"ph": "i", "name": "[memory]", "pid": 1, "tid": %s, "ts": %d, "args": {"Bytes": 8}}'
    row = '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": %s, "ts": %d, "dur": 1}'
    alone = ",".join([row % (9, 1), flow % ("s", 1, 5, 2), flow % ("f", 1, "\"6\"", 3)]).encode()
    mixed = ",".join([row % (9, 1), flow % ("s", 1, 5, 2), memory % (7, 3), flow % ("f", 1, 6, 4)]).encode()
    assert scanned([alone]) == 1
    for body in (alone, mixed):
        compiled = read_body([body], compiled=True)
        assert compiled == read_body([body], compiled=False)
    assert compiled["tracks"] == [(1, 5), (1, 7), (1, 6), (1, 9)]  # flows and memory first, in file order
    assert compiled["flows"][0] == [1, 1] and compiled["flows"][1] == [0, 1]
