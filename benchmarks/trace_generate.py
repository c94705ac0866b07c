"""Make a large trace by replicating the active window of a real one.

    python benchmarks/trace_generate.py SOURCE OUT --size-mb 1000

The source's events are written again and again, each copy shifted in time by the source's span
and with its ids (correlation, External id, flow ids) and step numbers offset, so every copy is a
new stretch of steps rather than duplicates of the same events. The output keeps Kineto's layout
(metadata, then `traceEvents` with one event per line). `.gz` output is gzip-compressed.
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
from pathlib import Path

import orjson

_STEP = re.compile(r"^ProfilerStep#(\d+)$")


def load(path: Path) -> dict:
    raw = gzip.open(path, "rb").read() if path.read_bytes()[:2] == b"\x1f\x8b" else path.read_bytes()
    doc = orjson.loads(raw)
    if isinstance(doc, list):
        doc = {"traceEvents": doc}
    return doc


def shifted(e: dict, k: int, span: float, id_offset: int, step_offset: int) -> dict:
    if k == 0:
        return e
    e = dict(e)
    if isinstance(e.get("ts"), (int, float)):
        e["ts"] = e["ts"] + k * span
    if e.get("ph") in ("s", "f") and isinstance(e.get("id"), int):
        e["id"] = e["id"] + k * id_offset
    name = e.get("name")
    if isinstance(name, str):
        m = _STEP.match(name)
        if m:
            e["name"] = f"ProfilerStep#{int(m.group(1)) + k * step_offset}"
    args = e.get("args")
    if isinstance(args, dict):
        args = dict(args)
        for key in ("correlation", "External id", "external id"):
            if isinstance(args.get(key), int) and args[key] > 0:
                args[key] = args[key] + k * id_offset
        e["args"] = args
    return e


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("source", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--size-mb", type=float, default=1000.0)
    args = p.parse_args()
    if args.out.exists():
        print(f"refusing to overwrite {args.out}", file=sys.stderr)
        return 2
    doc = load(args.source)
    events = [e for e in doc.pop("traceEvents") if isinstance(e, dict)]
    timed = [e for e in events if e.get("ph") == "X" and isinstance(e.get("ts"), (int, float))]
    span = max(e["ts"] + (e.get("dur") or 0) for e in timed) - min(e["ts"] for e in timed) + 1.0
    ids = [v for e in events for v in ((e.get("args") or {}).get("correlation"), (e.get("args") or {}).get("External id"), e.get("id"))
           if isinstance(v, int)]
    id_offset = max(ids, default=0) + 1
    steps = [int(m.group(1)) for e in events if isinstance(e.get("name"), str) and (m := _STEP.match(e["name"]))]
    step_offset = (max(steps) - min(steps) + 1) if steps else 0
    meta = [e for e in events if e.get("ph") == "M"]
    body = [e for e in events if e.get("ph") != "M"]
    target = int(args.size_mb * 1e6)
    tmp = args.out.with_name(args.out.name + ".part")
    opener = gzip.open if args.out.suffix == ".gz" else open
    written = 0
    with opener(tmp, "wb") as f:
        head = orjson.dumps(doc)[:-1]  # the metadata object without its closing brace
        f.write(head + (b", " if len(head) > 1 else b"") + b'"traceEvents": [\n  ')
        first = True
        for e in meta:
            line = (b"" if first else b",\n  ") + orjson.dumps(e)
            f.write(line)
            written += len(line)
            first = False
        k = 0
        while written < target:
            chunk = b",\n  ".join(orjson.dumps(shifted(e, k, span, id_offset, step_offset)) for e in body)
            f.write((b"" if first else b",\n  ") + chunk)
            written += len(chunk) + 4
            first = False
            k += 1
        f.write(b"\n]}\n")
    tmp.rename(args.out)
    print(f"{args.out}: {k} copies of {len(body)} events, about {written / 1e6:.0f} MB of events")
    return 0


if __name__ == "__main__":
    sys.exit(main())
