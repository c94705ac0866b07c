"""`stepscope analyze TRACE|DIR`: analyse existing profiler traces.

Text output is the rendered report; with `--json`, stdout holds exactly one JSON document.
`--timeline` (a run folder only) also writes the trace panel's timeline of each trace into it, never
over an existing one (the language server's analysis child asks for it).
"""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("trace", help="a trace (.json / .json.gz), a run folder, or a folder of per-rank traces")
    p.add_argument("--source-root", help="folder that source paths in the trace are relative to")
    p.add_argument("--json", action="store_true", help="print the report as one JSON document")
    p.add_argument("--timeline", action="store_true",
                   help="also write the trace panel's timeline.json into the run folder (never over an existing one)")


def run(args: argparse.Namespace) -> int:
    from ..analysis.panel import write_timelines
    from ..analysis.render import render_text
    from ..analysis.report import analyze, trace_paths
    from ..errors import UsageError
    from ..jsonio import dumps

    # one short-lived analysis that builds many small objects and no reference cycles: the cyclic
    # collector would only re-scan them; everything is freed by refcounting or at exit
    gc.disable()
    source_root = Path(args.source_root) if args.source_root else None
    if source_root is not None and not source_root.is_dir():
        raise UsageError(f"--source-root is not a folder: {source_root}")
    timelines: dict | None = None
    if args.timeline:
        _, run_dir = trace_paths(Path(args.trace))
        if run_dir is None:
            raise UsageError(f"--timeline writes into a run folder (one with files.json): {args.trace} is not one")
        timelines = {}
    report = analyze([Path(args.trace)], source_root=source_root, timelines=timelines)
    if timelines is not None:
        for problem in write_timelines(run_dir, timelines):  # the report stands without the panel's timeline
            print(f"stepscope: {problem}", file=sys.stderr)
    if args.json:
        sys.stdout.buffer.write(dumps(report) + b"\n")
    else:
        sys.stdout.write(render_text(report))
    sys.stdout.flush()
    return 0
