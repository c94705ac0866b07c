"""Decode a slice of trace events into compact typed records.

`decode_events(body)` turns the raw JSON of whole events (the text between the array's brackets)
into a list of `Event`. Only the fields the analysis reads are built; every other key (Python ids,
event indices, strides, concrete inputs, ...) is skipped by the decoder without creating a Python
object, which is most of what makes this faster than decoding every event into a dict
(`benchmarks/trace_decode.py` measures both side by side).

Invariants:
- Field types are exact in every returned `Event`: `ph`/`cat`/`name` are `str` or None, `pid`/`tid`
  are `int` or `str`, `ts`/`dur` are `float` or None, integer args are `int` with -1 for absent,
  input shapes are raw JSON text (`NO_JSON` when absent). A `dur` that is there but is no number
  ("NaN", "abc", true, a list) is `UNREADABLE` (a NaN no JSON number gives), so the reader can say
  which events it read as 0 µs instead of reading them as absent.
- Events whose values do not fit those types (a string timestamp, an id written as a float, a
  non-object in the array, ...) are still read: the slice is decoded again generically and each
  event coerced the way the reader always has (digit strings to ints, hex ids, non-numbers to
  absent). Typed decoding is only the fast path; it never changes what a trace means.
- Malformed JSON (and JSON nested deeper than the decoder's recursion allows) raises
  `InvalidJSON`; nothing else escapes.
"""

from __future__ import annotations

from typing import Any

import msgspec


class InvalidJSON(ValueError):
    """The slice is not valid JSON (e.g. a cut inside a string, or a truncated file)."""


NO_JSON = msgspec.Raw()  # an absent JSON value kept as text (empty, false)


class Args(msgspec.Struct, gc=False):
    """The `args` keys the analysis reads; -1 means absent."""

    correlation: int = -1
    external_id: int = msgspec.field(default=-1, name="External id")
    external_id_old: int = msgspec.field(default=-1, name="external id")  # 1.x spelling
    sequence: int = msgspec.field(default=-1, name="Sequence number")
    call_stack: str | None = msgspec.field(default=None, name="Call stack")
    # shapes are kept as their JSON text, undecoded: they are only interned and shown
    input_dims: msgspec.Raw = msgspec.field(default=NO_JSON, name="Input Dims")
    input_type: msgspec.Raw = msgspec.field(default=NO_JSON, name="Input type")
    nbytes: int = msgspec.field(default=-1, name="bytes")
    size: int = -1
    label: Any = msgspec.field(default=None, name="name")  # process_name / thread_name metadata
    mem_bytes: int | None = msgspec.field(default=None, name="Bytes")  # [memory] events
    total_allocated: int = msgspec.field(default=-1, name="Total Allocated")
    device_type: int = msgspec.field(default=-1, name="Device Type")
    device_id: int = msgspec.field(default=-1, name="Device Id")


class Event(msgspec.Struct, gc=False):
    ph: str | None = None
    cat: str | None = None
    name: str = ""
    pid: int | str = ""
    tid: int | str = ""
    ts: float | None = None
    dur: float | None = None
    id: int | str | None = None
    args: Args | None = None


_encode = msgspec.json.Encoder().encode
_typed = msgspec.json.Decoder(list[Event])
_generic = msgspec.json.Decoder()

#: one JSON string (with its quotes) to `str`, exactly as the decoder reads strings
decode_string = msgspec.json.Decoder(str).decode


def decode_events(body: bytes | bytearray | memoryview) -> list[Event]:
    """Decode `body`, the events of a JSON array without its brackets."""
    text = b"[" + bytes(body) + b"]"
    try:
        return _typed.decode(text)
    except msgspec.ValidationError:
        pass  # valid JSON whose values need coercion: the slow path below
    except msgspec.DecodeError as e:
        raise InvalidJSON(str(e)) from None
    except RecursionError:
        raise InvalidJSON("nested too deeply") from None
    try:
        items = _generic.decode(text)
    except msgspec.DecodeError as e:
        raise InvalidJSON(str(e)) from None
    except RecursionError:
        raise InvalidJSON("nested too deeply") from None
    return [_coerce(item) for item in items]


NOT_AN_OBJECT = "?"  # the `ph` given to array items that are not objects (counted as skipped)
#: the `dur` of an event whose `dur` is there but is no number: found by identity (`UNREADABLE in durs`)
UNREADABLE = float("nan")


def _coerce(item: Any) -> Event:
    """One generically decoded event, coerced to `Event`'s exact types."""
    if item.__class__ is not dict:
        return Event(ph=NOT_AN_OBJECT)
    ph = item.get("ph")
    cat = item.get("cat")
    name = item.get("name")
    raw_args = item.get("args")
    args = None
    if raw_args.__class__ is dict:
        call_stack = raw_args.get("Call stack")
        mem_bytes = raw_args.get("Bytes")
        args = Args(
            correlation=as_int(raw_args.get("correlation")),
            external_id=as_int(raw_args.get("External id")),
            external_id_old=as_int(raw_args.get("external id")),
            sequence=as_int(raw_args.get("Sequence number")),
            call_stack=call_stack if isinstance(call_stack, str) else None,
            input_dims=_raw(raw_args.get("Input Dims")),
            input_type=_raw(raw_args.get("Input type")),
            nbytes=as_int(raw_args.get("bytes")),
            size=as_int(raw_args.get("size")),
            label=raw_args.get("name"),
            mem_bytes=None if mem_bytes is None else as_int(mem_bytes),
            total_allocated=as_int(raw_args.get("Total Allocated")),
            device_type=as_int(raw_args.get("Device Type")),
            device_id=as_int(raw_args.get("Device Id")),
        )
    event_id = item.get("id")
    raw_dur = item.get("dur")
    dur = as_float(raw_dur)
    return Event(
        ph=ph if ph is None or isinstance(ph, str) else str(ph),
        cat=cat if cat is None or isinstance(cat, str) else None,
        name="" if name is None else name if isinstance(name, str) else str(name),
        pid=norm_id(item.get("pid")),
        tid=norm_id(item.get("tid")),
        ts=as_float(item.get("ts")),
        dur=UNREADABLE if dur is None and raw_dur is not None else dur,
        id=None if event_id is None else as_int(event_id),
        args=args,
    )


def _raw(v: Any) -> msgspec.Raw:
    return NO_JSON if v is None else msgspec.Raw(_encode(v))


def norm_id(v: Any) -> int | str:
    """A pid or tid as the key of a track: digit strings and whole floats are the same int."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str):
        s = v.strip()
        if s.removeprefix("-").isdecimal():  # what int() reads (isdigit also admits "²")
            return int(s)
        return s
    return "" if v is None else str(v)


def as_float(v: Any) -> float | None:
    """A finite number, or None."""
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer beyond a double
        return None
    return f if f == f and f not in (float("inf"), float("-inf")) else None


def as_int(v: Any) -> int:
    """An integer id or count; -1 when absent or unreadable (hex strings are read)."""
    if v is None:
        return -1
    if type(v) is int:
        return v
    if isinstance(v, float):
        return int(v) if v.is_integer() else -1
    try:
        return int(v)
    except (TypeError, ValueError):
        try:
            return int(str(v), 0)  # hex strings
        except (TypeError, ValueError):
            return -1
