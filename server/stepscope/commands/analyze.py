"""`stepscope analyze TRACE|DIR`: analyse existing profiler traces.

Text output is the rendered report; with `--json`, stdout holds exactly one JSON document.
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


def run(args: argparse.Namespace) -> int:
    from ..analysis.render import render_text
    from ..analysis.report import analyze
    from ..errors import UsageError
    from ..jsonio import dumps

    # one short-lived analysis that builds many small objects and no reference cycles: the cyclic
    # collector would only re-scan them; everything is freed by refcounting or at exit
    gc.disable()
    source_root = Path(args.source_root) if args.source_root else None
    if source_root is not None and not source_root.is_dir():
        raise UsageError(f"--source-root is not a folder: {source_root}")
    report = analyze([Path(args.trace)], source_root=source_root)
    if args.json:
        sys.stdout.buffer.write(dumps(report) + b"\n")
    else:
        sys.stdout.write(_render(report, render_text))
    sys.stdout.flush()
    return 0


def _render(report: dict, render_text) -> str:
    """The text report. A trace without step markers has no ms/step: its headline names the window
    instead, its per-step wording becomes per-window, and ranks without steps say so."""
    ranks = report.get("ranks") or []
    stepless_ranks = [r for r in ranks if r.get("ms_per_step") is None]
    if report.get("ms_per_step") is not None and not stepless_ranks:
        return render_text(report)
    shown = {**report, "ranks": [r for r in ranks if r.get("ms_per_step") is not None]}
    if report.get("ms_per_step") is not None:
        lines = render_text(shown).split("\n")
    else:
        window_ms = (report.get("window") or {}).get("ms") or 0.0
        lines = render_text({**shown, "ms_per_step": window_ms}).split("\n")
        lines[0] = f"no step markers (ProfilerStep#N): one window of {window_ms:.3f} ms, no ms/step"
        lines = [ln for ln in lines if not ln.startswith("steps (ms):")]
        lines = [ln.replace(", per step", ", per window") for ln in lines]
    if stepless_ranks:
        names = ", ".join(f"rank {r.get('rank')}" for r in stepless_ranks)
        lines.insert(2, f"no step markers in: {names} (one window each, no ms/step)")
    return "\n".join(lines)
