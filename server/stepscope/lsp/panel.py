"""What the trace panel asks the language server for: `stepscope/timeline`, and the code action that
opens the panel on a finding.

    stepscope/timeline {runId, rank?, startUs?, endUs?, maxSpans?} → a timeline document
        (analysis/timeline.schema.json)

Without a range, the answer is the run's `timeline.json` as the analysis wrote it (`timeline-rank<r>.json`
for rank r). With a range (µs from the window's start), or for a run analysed before timelines
existed, it is computed from the run's trace in a child process (timeline_child.py): the server
never reads a trace, and the panel never gets one, only a summary of at most `maxSpans` spans.

Invariants:
- A run is named by its id (runs.py checks it); the trace and the timeline are found in its folder by
  the run contract's names, never taken from the client.
- A missing timeline.json is computed and written once (never over a file); one that cannot be read is
  computed again and left as it is, and the answer's `notes` say so.
- Every refusal is a JSON-RPC error with one line.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from .. import errors, jsonio
from ..agent import protocol
from .timeline_child import TimelineChild, TimelineUnavailable

if TYPE_CHECKING:
    from .runs import Run
    from .server import StepscopeServer

TIMELINE_REQUEST = "stepscope/timeline"
#: what a document holds by default, and the bounds a client may ask for (analysis/timeline.py's)
DEFAULT_SPANS = 200_000
MIN_SPANS = 1000
MAX_SPANS = 1_000_000


class NoTimeline(errors.UsageError):
    pass


class Timelines:
    """Serves `stepscope/timeline`: documents from run folders, the rest from one child process."""

    def __init__(self) -> None:
        self.child = TimelineChild()

    async def timeline(self, ls: "StepscopeServer", params: dict[str, Any]) -> dict[str, Any]:
        run_dir = ls.runs.folder_of(params.get("runId"), ls.roots())
        rank = _rank(params.get("rank"))
        start, end = _range(params.get("startUs"), params.get("endUs"))
        cap = _cap(params.get("maxSpans"))
        trace = trace_of(run_dir, rank)
        name = run_timeline_name(trace)
        path = run_dir / name
        notes: list[str] = []
        if start is None and path.is_file():
            doc = _read_timeline(path)
            if isinstance(doc, dict) and cap >= DEFAULT_SPANS:
                return doc
            if not isinstance(doc, dict):
                notes.append(f"{name} of this run could not be read ({doc}); this timeline was made again "
                             "from the trace")
        if not trace.is_file():
            raise NoTimeline(f"run {run_dir.name} has no {name} and its trace {trace.name} is gone")
        request: dict[str, Any] = {"trace": str(trace), "cap": cap}
        if start is None:
            request.update(whole=True, write=not path.exists() and cap == DEFAULT_SPANS)
        else:
            request.update(start_us=start, end_us=end)
        loop = asyncio.get_running_loop()
        doc = await loop.run_in_executor(None, self.child.ask, request)
        if notes:
            doc["notes"] = [*doc.get("notes", []), *notes]
        return doc

    def stop(self) -> None:
        self.child.stop()


def trace_of(run_dir: Path, rank: int | None) -> Path:
    """The run's trace the panel shows: rank `rank`'s (the lowest rank's by default, as the report's
    headline), its first repeat cycle; a run without traces is refused."""
    traces = []
    for path in run_dir.iterdir():
        name = protocol.parse_run_file_name(path.name)
        if name.is_trace and path.is_file():
            traces.append((name.rank is None, name.rank or 0, name.cycle, path.name.endswith(".gz"), path))
    if rank is not None:
        traces = [t for t in traces if not t[0] and t[1] == rank]
        if not traces:
            raise NoTimeline(f"run {run_dir.name} has no trace of rank {rank}")
    if not traces:
        raise NoTimeline(f"run {run_dir.name} has no trace: it ended before its window was recorded")
    traces.sort(key=lambda t: t[:4])
    # ranks first (a distributed run's lowest rank is its headline), then a single process's trace
    with_rank = [t for t in traces if not t[0]]
    return (with_rank or traces)[0][-1]


def run_timeline_name(trace: Path) -> str:
    name = protocol.parse_run_file_name(trace.name)
    return protocol.run_file_name(protocol.TIMELINE, name.rank, name.cycle)


def _read_timeline(path: Path) -> dict[str, Any] | str:
    """The document, or why it cannot be used (a few words)."""
    try:
        doc = jsonio.read_json(path)
    except OSError as e:
        return e.strerror or str(e)
    except ValueError:
        return "not JSON"
    if not isinstance(doc, dict) or not isinstance(doc.get("schema_version"), int) or not isinstance(doc.get("spans"), dict):
        return "not a timeline document"
    return doc


def _rank(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise errors.UsageError(f"rank must be a whole number ≥ 0, got {value!r}")
    return value


def _range(start: Any, end: Any) -> tuple[float | None, float | None]:
    if start is None and end is None:
        return None, None
    for v in (start, end):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise errors.UsageError("startUs and endUs must both be given, as numbers of µs from the window's start")
    if start < 0 or end <= start:
        raise errors.UsageError(f"the range [{start}, {end}] µs is not a range inside the window")
    return float(start), float(end)


def _cap(value: Any) -> int:
    if value is None:
        return DEFAULT_SPANS
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_SPANS <= value <= MAX_SPANS:
        raise errors.UsageError(f"maxSpans must be a whole number from {MIN_SPANS} to {MAX_SPANS}, got {value!r}")
    return value


# -- opening the panel from a finding -----------------------------------------------------------------

def panel_target(run: "Run", file: str | None, line: int | None) -> dict[str, Any]:
    """What opens the panel on a line of a run: `{runId, fileId, line}` (fileId: the run's own id of
    the file in files.json, as the timeline names it; null when the table does not have it)."""
    file_id = None
    if file:
        table = _files_table(run.run_dir)
        try:
            rel = Path(file).resolve().relative_to(Path(run.root).resolve()).as_posix()
        except ValueError:
            rel = None
        file_id = next((fid for fid, path in table.items() if path == rel), None) if rel else None
    return {"runId": run.run_id, "fileId": file_id, "line": line}


def _files_table(run_dir: Path) -> dict[str, str]:
    try:
        table = jsonio.read_json(run_dir / protocol.FILES)
    except (OSError, ValueError):
        return {}
    files = table.get("files") if isinstance(table, dict) else None
    return {k: v for k, v in files.items() if isinstance(v, str)} if isinstance(files, dict) else {}


def finding_actions(ls: "StepscopeServer", uri: str, context: types.CodeActionContext | None,
                    command: str | None) -> list[types.CodeAction]:
    """"Show in the trace panel" for each of the run's findings among the diagnostics at the cursor,
    when the client has a panel command (`initializationOptions.panelCommand`)."""
    if not command or context is None:
        return []
    run = ls.runs.shown(uri, ls.roots())
    if run is None:
        return []
    findings = run.findings.get(uri, [])
    actions = []
    for diagnostic in context.diagnostics:
        if not str(diagnostic.source or "").startswith("stepscope"):
            continue
        same_kind = [f for f in findings if f.get("kind") == diagnostic.code]
        if not same_kind:
            continue  # a static check's diagnostic
        # the finding on the diagnostic's line, else (the line moved with an edit) the first of its kind
        finding = next((f for f in same_kind if f.get("line") == diagnostic.range.start.line + 1), same_kind[0])
        target = panel_target(run, finding.get("file"), finding.get("line"))
        actions.append(types.CodeAction(
            title=f"Show this finding ({finding.get('kind')}) in the trace panel",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            command=types.Command(title="Open Trace Panel", command=command, arguments=[target]),
        ))
    return actions
