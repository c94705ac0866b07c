"""Decoding a trace's events, side by side: the JSON libraries against the column scanner.

    PYTHONPATH=server python benchmarks/trace_decode.py TRACE [--repeat N]

The reader's own slices of TRACE (inflated in advance, so only decoding is timed) are decoded by:
- `orjson.loads`: the design's JSON library; a dict per event, no columns yet;
- `msgspec records`: events.py's typed decoding, only the fields the analysis reads;
- `records -> columns`: the same, then copied into columns (`_Builder.add`: the pure-Python path);
- `column scanner`: the compiled scanner straight into columns (`_Builder.add_raw`).
Each runs in this one process, in turn, `--repeat` times (best time kept), and the ratios to the
column scanner are printed. Only the last two build the trace; the first two are for scale.
"""

from __future__ import annotations

import argparse
import gc
import time
from pathlib import Path

import orjson

from stepscope.trace import Trace, reader
from stepscope.trace.events import decode_events


def slices_of(path: Path) -> list[bytes]:
    stream = reader._Stream(path)
    try:
        return [bytes(payload) for what, payload in reader._iter_slices(stream, {}) if what == "raw"]
    finally:
        stream.close()


def best_of(repeat: int, fn) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if reader.ColumnScanner is None:
        raise SystemExit("the column scanner is not built here (pip install -e . with a C compiler)")
    raws = slices_of(args.trace)
    if not raws:
        raise SystemExit(f"{args.trace}: too small or not laid out in slices; use a trace of several MB")
    size = sum(map(len, raws))

    def with_builder(compiled: bool):
        def run() -> None:
            builder = reader._Builder(Trace(path=args.trace), compiled=compiled)
            for raw in raws:
                if compiled:
                    builder.add_raw(raw)
                else:
                    builder.add(decode_events(raw))
            builder.finish()
        return run

    gc.disable()  # as the reader runs
    contenders = {
        "orjson.loads": lambda: [orjson.loads(b"[" + raw + b"]") for raw in raws],
        "msgspec records": lambda: [decode_events(raw) for raw in raws],
        "records -> columns": with_builder(False),
        "column scanner": with_builder(True),
    }
    times = {name: best_of(args.repeat, fn) for name, fn in contenders.items()}
    print(f"{args.trace} ({size / 1e6:.1f} MB of events in {len(raws)} slices, best of {args.repeat})")
    for name, seconds in times.items():
        print(f"  {name:20s} {seconds:6.3f} s  {size / 1e6 / seconds:7.1f} MB/s")
    scanner = times["column scanner"]
    for name, seconds in times.items():
        if name != "column scanner":
            print(f"  {name} / column scanner time: {seconds / scanner:.2f}x")


if __name__ == "__main__":
    main()
