"""`stepscope/shareTrace {runId}`: the redacted copies of a run's traces, written beside them;
`stepscope/traceFiles {runId}`: where a run's traces are, to open in Perfetto or chrome://tracing
(the files the profiler wrote, which both open as they are).

The language server never reads a trace (docs/architecture.md): each copy is made by a child
process of the server's own interpreter, `stepscope redact TRACE --beside --json`, isolated from
the user's environment as the analysis child is. The answer says where each copy is and how many
distinct secrets of each kind it replaced; never a secret, not even masked (the editor shows a
summary; `stepscope redact --check` on the trace lists the rest).

Invariants:
- Nothing is overwritten: `--beside` takes the first free name, so an earlier copy stays.
- A run that has not ended (no status.json), a run without traces, a trace the child cannot
  redact: a one-line error (`ShareFailed`), with the copies already written named in it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from .. import errors, jsonio
from ..agent import protocol
from .analysis_child import import_path

SHARE_REQUEST = "stepscope/shareTrace"
TRACE_FILES_REQUEST = "stepscope/traceFiles"
#: seconds one trace's copy may take (a large trace on a loaded machine)
LIMIT_S = 600.0
_ENTRY = ("import sys; sys.path[:0] = sys.argv.pop(1).split({sep!r}); "
          "from stepscope.cli import main; raise SystemExit(main())")


class ShareFailed(errors.StepscopeError):
    """No copy (or not every copy) could be written; the reason in one line."""


def run_traces(run_dir: Path) -> list[Path]:
    """Every trace file of a run folder (all ranks, all repeat cycles), by the run contract's names."""
    return sorted(p for p in run_dir.iterdir() if p.is_file() and protocol.parse_run_file_name(p.name).is_trace)


def command(trace: Path) -> list[str]:
    return [sys.executable, "-I", "-X", "utf8", "-c", _ENTRY.format(sep=os.pathsep), os.pathsep.join(import_path()),
            "redact", str(trace), "--beside", "--json"]


def redact_copy(trace: Path) -> dict[str, Any]:
    """One trace's copy, by a child process: {trace, copy, counts, occurrences}."""
    try:
        done = subprocess.run(command(trace), stdin=subprocess.DEVNULL, capture_output=True, cwd=trace.parent,
                              timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        raise ShareFailed(f"{trace.name}: no redacted copy after {LIMIT_S:g} s; nothing was written") from None
    if done.returncode != 0:
        said = [line for line in done.stderr.decode(errors="replace").splitlines() if line.strip()]
        last = said[-1].removeprefix("stepscope: ") if said else f"exit status {done.returncode}"
        raise ShareFailed(f"{trace.name}: no redacted copy: {last}", done.returncode if done.returncode > 0 else 1)
    try:
        doc = jsonio.loads(done.stdout)
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or not isinstance(doc.get("output"), str):
        raise ShareFailed(f"{trace.name}: the redaction printed no report", 70)
    return {"trace": doc["trace"], "copy": doc["output"], "counts": doc.get("counts") or {},
            "occurrences": doc.get("occurrences", 0)}


def summary(copies: list[dict[str, Any]]) -> str:
    """One line for the editor: how many copies, and what they replaced."""
    totals: dict[str, int] = {}
    for c in copies:
        for kind, n in c["counts"].items():
            totals[kind] = totals.get(kind, 0) + n
    what = ", ".join(f"{n} {kind}" for kind, n in sorted(totals.items()))
    names = ", ".join(Path(c["copy"]).name for c in copies)
    replaced = f"replaced {what}" if what else "nothing needed replacing"
    return f"redacted copy written: {names} ({replaced})"


def ended_run_traces(run_dir: Path, verb: str = "share") -> list[Path]:
    """The traces of a run that has ended; a ShareFailed naming why there are none (`verb`: what the
    user asked to do with them)."""
    if not (run_dir / protocol.STATUS).is_file():
        raise ShareFailed(f"run {run_dir.name} has not ended (or stopped before it said how): {verb} it once it has",
                          errors.USAGE)
    traces = run_traces(run_dir)
    if not traces and (run_dir / protocol.MEASURE).is_file():
        raise ShareFailed(f"run {run_dir.name} is a measure run: it timed the step without the profiler, so it holds "
                          f"no trace to {verb} ({verb} a profile run)", errors.USAGE)
    if not traces:
        raise ShareFailed(f"run {run_dir.name} has no trace to {verb}: it ended before its window was recorded",
                          errors.USAGE)
    return traces


def trace_files(run_dir: Path) -> dict[str, Any]:
    """Where the run's traces are: {runId, folder, traces: [{path, bytes}]}; nothing is read or copied."""
    traces = ended_run_traces(run_dir, "open")
    return {"runId": run_dir.name, "folder": str(run_dir),
            "traces": [{"path": str(t), "bytes": t.stat().st_size} for t in traces]}


def share_run(run_dir: Path) -> dict[str, Any]:
    """The redacted copies of every trace of the run (blocking: call it from a worker thread)."""
    traces = ended_run_traces(run_dir)
    copies: list[dict[str, Any]] = []
    for trace in traces:
        try:
            copies.append(redact_copy(trace))
        except ShareFailed as e:
            if copies:
                written = ", ".join(Path(c["copy"]).name for c in copies)
                raise ShareFailed(f"{e} (written before it: {written})", e.exit_code) from None
            raise
    return {"runId": run_dir.name, "folder": str(run_dir), "copies": copies, "summary": summary(copies)}
