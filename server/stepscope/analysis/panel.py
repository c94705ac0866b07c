"""What the trace panel reads of a run besides its report: the timeline document of each trace.

    data = timeline_json(trace, links, steps, per=..., file_table=..., ...)   # bytes, written as is
    write_timelines(run_dir, {trace_path: data})
    doc = document_of(spans)                    # the same document from a span table already built

The document (timeline.schema.json beside this module) is the window's timeline summary (timeline.py) with the
per-step breakdown (breakdown.py) and the operator and kernel tables (op_tables.py); `files` covers
every `{fileId, line}` in it. It is computed while the trace is in memory, during the analysis of a
profile run, and written beside the report as `timeline.json` (`timeline-rank<r>.json` for a rank's
trace, `timeline-<k>.json` for a repeat cycle's): the panel never reads the raw trace. Ranges at a
finer level come from `timeline.summarize` over the same span table.

Invariants: a document is written once, atomically, never over an earlier one; a trace whose
timeline cannot be built (a reason is returned instead) leaves the run's other results untouched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from .. import jsonio
from ..agent.protocol import TIMELINE, parse_run_file_name, run_file_name
from ..trace import Trace
from .breakdown import PARTS, step_breakdown
from .findings.thresholds import DEFAULT_BATCH_READ_PATTERNS
from .labels import FileTable
from .links import Links
from .op_tables import kernel_table, operator_shape_table, operator_table
from .steps import Step
from .timeline import DEFAULT_CAP, SpanTable, build_spans, summarize

SCHEMA = Path(__file__).resolve().parent / "timeline.schema.json"


def timeline_document(trace: Trace, links: Links, steps: list[Step], *, per: str, file_table: FileTable | None,
                      source_root: Path | None, batch_read_patterns: Iterable[str] = DEFAULT_BATCH_READ_PATTERNS,
                      cap: int = DEFAULT_CAP) -> dict:
    spans = build_spans(trace, links, steps, file_table=file_table, source_root=source_root, per=per,
                        batch_read_patterns=batch_read_patterns)
    return document_of(spans, cap=cap)


def document_of(spans: SpanTable, *, cap: int = DEFAULT_CAP) -> dict:
    """The whole window's document from a span table (`timeline_document` without reading a trace)."""
    doc = summarize(spans, cap=cap)
    doc["breakdown"] = {"parts": list(PARTS), "steps": step_breakdown(spans)}
    operators, ops_left = operator_table(spans)
    kernels, kernels_left = kernel_table(spans)
    doc["operators"] = {"rows": operators, "left_out": ops_left}
    by_shapes = operator_shape_table(spans)
    if by_shapes is not None:  # only where shapes were recorded: never rows that could only say "none"
        doc["operators"]["by_shapes"] = {"rows": by_shapes[0], "left_out": by_shapes[1]}
    doc["kernels"] = {"rows": kernels, "left_out": kernels_left}
    shape_rows = by_shapes[0] if by_shapes is not None else []
    used = set(doc["lines"]["file"]) | {r["file"] for r in operators + kernels + shape_rows if r["file"] is not None}
    doc["files"] = {fid: rel for fid, rel in spans.files.items() if fid in used}
    return with_redactable(doc)


#: the categories of spans whose names the user wrote (labels): looked at as strictly as sharing does
_LABEL_CATEGORIES = frozenset({"region", "batch_read", "annotation", "gpu_annotation"})
#: neither labels nor names of work: Python frames (file paths) and merged spans
_NOT_WORK = frozenset({"python", "mixed"})


def with_redactable(doc: dict) -> dict:
    """`doc["redactable"]`: each string of the document that sharing the trace would change (span
    names, thread labels, file paths), with the kinds it would be redacted as (`["email"]`,
    `["path", "user"]`). Decided once per distinct string, as `stepscope redact` decides it: labels
    strictly, names of work (operators, kernels, runtime calls) never. Never the replacement: the
    panel shows a mark and the kind. A trace's metadata (its host and user names) is not seen here,
    so a bare host or user name in a label is replaced in the copy but not marked."""
    from ..redact.redactor import Redactor

    categories = doc.get("categories", [])
    names = doc.get("names", [])
    spans = doc.get("spans", {})
    by_role: dict[bool, set[str]] = {True: set(), False: set()}
    for name, cat in zip(spans.get("name", []), spans.get("category", [])):
        if 0 <= name < len(names) and 0 <= cat < len(categories) and categories[cat] not in _NOT_WORK:
            by_role[categories[cat] in _LABEL_CATEGORIES].add(names[name])
    labels = by_role[True]
    work = by_role[False] | {r["name"] for key in ("operators", "kernels") for r in (doc.get(key) or {}).get("rows", [])}
    strings = {*names, *(t["label"] for t in doc.get("tracks", [])), *doc.get("files", {}).values()}
    redactor = Redactor(labels=labels, work_names=work)
    marks: dict[str, list[str]] = {}
    for text in sorted(strings):
        kinds = sorted({hit.kind for hit in redactor.hits(text)})
        if kinds and redactor.redact(text) is not None:
            marks[text] = kinds
    doc["redactable"] = marks
    return doc


def timeline_json(trace: Trace, links: Links, steps: list[Step], **options) -> bytes:
    """The timeline document as JSON, or, when it cannot be built, `b"!"` and a one-line reason (so a
    forked child can send either through a pipe)."""
    try:
        return jsonio.dumps(timeline_document(trace, links, steps, **options))
    except Exception as e:  # the report stands without the panel's timeline; the caller says why
        return b"!" + f"{type(e).__name__}: {e}".encode()


def timeline_file_name(trace_path: Path) -> str | None:
    """`trace.json` -> `timeline.json`, `trace-rank1.json.gz` -> `timeline-rank1.json`; None for a file
    not named as a run folder names its traces."""
    name = parse_run_file_name(Path(trace_path).name)
    return run_file_name(TIMELINE, name.rank, name.cycle) if name.is_trace else None


def write_timelines(run_dir: Path, timelines: dict[Path, bytes]) -> list[str]:
    """Write each trace's timeline document into the run folder (never over an existing file); the
    one-line reasons of those that could not be built or written."""
    problems = []
    for trace_path, data in timelines.items():
        name = timeline_file_name(trace_path)
        if name is None:
            continue
        if data.startswith(b"!"):
            problems.append(f"no timeline for {Path(trace_path).name}: {data[1:].decode(errors='replace')}")
            continue
        try:
            jsonio.write_bytes(Path(run_dir) / name, data, replace=False)
        except OSError as e:
            problems.append(f"no timeline for {Path(trace_path).name}: {e}")
    return problems
