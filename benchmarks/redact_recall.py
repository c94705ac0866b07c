"""Recall and false positives of `stepscope redact`, per kind of secret: the table of docs/redact.md.

    python benchmarks/redact_recall.py [--traces DIR] [--seed 1] [--copies 1] [--list]

1. The labelled corpus (tests/redact/labelled.py): each real base trace, written in each layout
   (Kineto's, minified, escaped slashes, ASCII escapes), gets a fresh random secret of every kind
   in every place a trace carries strings, and every decoy in every plain place. Each file is
   redacted; per kind: planted, found (the string holding it changed), leaked (some part of it is
   still anywhere in the copy, escapes undone, look-alikes folded), and the decoys changed.
2. The real traces as they are (DIR/public, DIR/public2 and tests/data/traces; DIR defaults to
   ../shared/traces beside the repository): every string is decided; what would be changed is a
   false positive unless it is one of the secrets real traces carry (a home or user path, a user or
   host name the trace's metadata names, and their occurrences). `--list` prints each change.

Prints Markdown tables. Needs the package importable (run with the project's .venv).
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "server"))

from stepscope.errors import StepscopeError  # noqa: E402
from stepscope.redact.trace_file import check_trace, redact_trace  # noqa: E402
from tests.redact import labelled  # noqa: E402

# what real traces hold that is secret: (kind, what) of a finding that is not a false positive
REAL_SECRETS = {("path", "home path"), ("path", "user path"), ("user", "user name"), ("host", "host name"),
                ("host", "IP address"), ("token", "Hugging Face token"), ("workspace", "workspace path")}


def planted_corpus(traces: Path | None, seed: int, copies: int) -> None:
    rng = random.Random(seed)
    rows: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])  # planted, found, leaked
    places: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
    decoys: dict[str, int] = collections.Counter()
    decoys_changed: list[tuple[str, str, str]] = []
    misses: list[tuple[str, str, str, str]] = []
    files = 0
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for base in labelled.bases(traces):
            for layout, write in labelled.LAYOUTS.items():
                doc = labelled.load(base)
                planted = labelled.plant(doc, rng, copies=copies)
                src = Path(tmp) / "planted.json"
                out = Path(tmp) / "copy.json"
                src.write_text(write(doc), encoding="utf-8")
                out.unlink(missing_ok=True)
                redact_trace(src, out)
                if check_trace(out).unsafe:
                    misses.append(("(copy)", "", base.name, "the copy does not check clean"))
                files += 1
                copy = json.loads(out.read_text(encoding="utf-8"))
                for o in labelled.outcome(planted, copy):
                    p = o.planted
                    if p.kind == "decoy":
                        decoys[p.place] += 1
                        if not o.found:
                            decoys_changed.append((p.text, str(labelled.get(copy, p.path)), layout))
                        continue
                    for table, key in ((rows, p.kind), (places, p.place)):
                        table[key][0] += 1
                        table[key][1] += o.found
                        table[key][2] += bool(o.leaked)
                    if not o.found or o.leaked:
                        misses.append((p.kind, p.place, layout, p.text[:60]))
    elapsed = time.perf_counter() - started
    print(f"### Planted secrets ({files} files: {len(labelled.bases(traces))} real traces x {len(labelled.LAYOUTS)} "
          f"layouts, seed {seed}, {elapsed:.0f} s)\n")
    print("| kind | planted | found | leaked |\n|---|---:|---:|---:|")
    for kind in [k.name for k in labelled.SECRETS]:
        planted_n, found, leaked = rows[kind]
        print(f"| {kind} | {planted_n} | {found} | {leaked} |")
    total = [sum(r[i] for r in rows.values()) for i in range(3)]
    print(f"| **all** | **{total[0]}** | **{total[1]}** | **{total[2]}** |\n")
    print("| place | planted | found | leaked |\n|---|---:|---:|---:|")
    for place, (planted_n, found, leaked) in places.items():
        print(f"| {place} | {planted_n} | {found} | {leaked} |")
    print(f"\nDecoys ({len(labelled.DECOYS)} strings that look like secrets, in {len(labelled.PLACES)} places): "
          f"{sum(decoys.values())} planted, {len(decoys_changed)} changed.")
    for text, now, layout in decoys_changed[:20]:
        print(f"- changed: {text!r} -> {now!r} ({layout})")
    for miss in misses[:20]:
        print(f"- missed: {miss}")


def real_corpus(traces: Path | None, show: bool) -> None:
    folders = [traces / "public", traces / "public2"] if traces is not None else []
    folders.append(REPO / "tests" / "data" / "traces")
    files = sorted(p for f in folders if f.is_dir() for p in f.rglob("*.json*")
                   if p.is_file() and p.name not in ("files.json", "scenario.json", "benchmark_simple_add_et.json.gz"))
    by_kind: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])  # true, false positive
    listed: list[tuple[str, str, str, str, str]] = []
    read = 0
    for path in files:
        try:
            result = check_trace(path)
        except StepscopeError:
            continue  # not a trace (the reader refuses it): nothing to share
        read += 1
        for f in result.found:
            true = (f.kind, f.what) in REAL_SECRETS or (f.kind in ("user", "host") and f.what.startswith("value of"))
            by_kind[f.kind][0 if true else 1] += 1
            listed.append(("secret" if true else "FALSE POSITIVE", f.kind, f.what, path.name, f.excerpt[:80]))
    print(f"\n### Real traces as they are ({read} traces)\n")
    print("| kind | changed: real secrets | false positives |\n|---|---:|---:|")
    for kind in ("email", "token", "path", "host", "user", "input", "phone", "national-id", "birth-date", "workspace"):
        true, false = by_kind.get(kind, (0, 0))
        print(f"| {kind} | {true} | {false} |")
    if show:
        for row in listed:
            print("- " + " | ".join(row))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--traces", type=Path, default=REPO.parent / "shared" / "traces",
                   help="the folder holding public/ and public2/ (default: ../shared/traces)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--copies", type=int, default=1, help="fresh secrets of each kind in each place of each file")
    p.add_argument("--list", action="store_true", help="list every change in the real traces")
    args = p.parse_args()
    traces = args.traces if (args.traces / "public").is_dir() else None
    if traces is None:
        print(f"(no public traces at {args.traces}: the test data's traces only)\n")
    planted_corpus(traces, args.seed, args.copies)
    real_corpus(traces, args.list)
    return 0


if __name__ == "__main__":
    sys.exit(main())
