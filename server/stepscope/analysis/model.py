"""The report's data model: what `analyze()` returns, what `report.json` and `--json` hold, and what
every surface (the CLI text, the editor, the panel) reads. One typed definition, a version, the
JSON Schema generated from it, and the file table that lets a surface point at `{file_id, line}`.

Why TypedDicts, not dataclasses: the analysis builds the report as plain dicts in many small pure
functions (attribution, ranks, evidence, findings), the findings rules read it as a dict, and
orjson writes those dicts straight to `report.json`. Typing the dicts keeps every producer and the
bytes of the report unchanged, costs nothing at run time, and still validates: msgspec (already the
trace reader's decoder) checks a document against these types (`validate`) and derives the JSON
Schema from them (`json_schema`), so the types, the runtime check and the shipped schema are one
definition. pyinstrument's `Session` gives the same single model with its `load`/`to_json`; here
they are `load_report` and `jsonio.dumps`.

Invariants:
- `SCHEMA_VERSION` changes when a field is removed, renamed or changes meaning; adding a field does
  not change it. A report without `schema_version` was written before versioning: `load_report`
  upgrades it (adds the file table) and it then reads as version 1.
- `report.schema.json` beside this module is `json_schema()` written out (`python -m
  stepscope.analysis.model > server/stepscope/analysis/report.schema.json`); a test fails when
  they differ.
- Paths in `file` fields stay absolute (the CLI contract). The file table `files` lists every file
  the report points at once, workspace-relative (POSIX, relative to `source_root`) when it lies
  under it, else as the report has it (absolute, but for a path a trace's own record gave relative),
  with `in_root` saying which; every object that points at a source line
  (`file` + `line`: lines, regions, findings, missing labels, ranks' lines and regions, evidence)
  also carries `file_id`, its index in `files` (null when `file` is null).
- `attach_files` adds only `schema_version`, `files` and `file_id`: no figure changes.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Annotated, Any, Iterator, Literal, TypedDict

import msgspec

from ..errors import UsageError

SCHEMA_VERSION = 1
SCHEMA_FILE = Path(__file__).with_name("report.schema.json")

#: milliseconds (per active step, or per window for a trace without steps); never negative
Ms = Annotated[float, msgspec.Meta(ge=0)]
Count = Annotated[int, msgspec.Meta(ge=0)]
#: an absolute path (the CLI contract: paths in JSON are absolute)
AbsolutePath = Annotated[str, msgspec.Meta(pattern="^/")]
#: index into the report's `files`
FileId = Annotated[int, msgspec.Meta(ge=0)]
LineNumber = Annotated[int, msgspec.Meta(ge=0)]


class FileEntry(TypedDict):
    """One file the report points at: `path` relative to `source_root` (POSIX) when `in_root`,
    else as the report's `file` fields have it."""
    path: str
    in_root: bool


class CopyCount(TypedDict):
    count: Count
    bytes: Count


class Copies(TypedDict):
    h2d: CopyCount
    d2h: CopyCount
    d2d: CopyCount


class OpInputs(TypedDict, total=False):
    """An outermost op of a line with the shapes of its inputs (`--shapes`)."""
    op: str
    shapes: list[Any]
    types: list[str]
    calls: float
    ms: float


class NamedWork(TypedDict):
    """Operators a line called (outermost on their thread) or kernels it launched, by name
    (line_work.py): calls (launches) per step, and the union of their time per step."""
    name: str
    calls: Annotated[float, msgspec.Meta(ge=0)]
    ms: Ms


class FusedLine(TypedDict, total=False):
    file: AbsolutePath
    line: LineNumber
    file_id: FileId


class CompiledLine(TypedDict, total=False):
    """What a line got from compiled graphs (compiled_code.py): the kernels Inductor's records trace to
    it, the other lines its fused kernels also came from, and the part of its figures in those shared
    kernels (shown on each line, never summed). On a line that also ran eager: the compiled part's own
    `wall_ms`, `gpu_ms`, `backward_ms`. `kernels` are the forward graphs' (most called first, at most
    8), `backward_kernels` the backward graphs' run for this line's forward."""
    kernels: list[str]
    backward_kernels: list[str]
    fused_with: list[FusedLine]
    backward_fused_with: list[FusedLine]
    shared_ms: Ms
    shared_gpu_ms: Ms | None
    wall_ms: Ms
    gpu_ms: Ms | None
    backward_ms: Ms | None


class FewCalls(TypedDict):
    """The slowest `calls` of the `of` calls the window holds carry `share` of a line's call time."""
    calls: Annotated[int, msgspec.Meta(ge=1)]
    of: Annotated[int, msgspec.Meta(ge=1)]
    share: Annotated[float, msgspec.Meta(ge=0, le=1)]


class _LineRequired(TypedDict):
    file: AbsolutePath
    line: LineNumber
    precision: Literal["exact", "call", "function", "compiled"]
    wall_ms: Ms
    cpu_self_ms: Ms
    cpu_total_ms: Ms
    gpu_ms: Ms | None
    backward_ms: Ms | None
    kernels: Count
    copies: Copies
    sync_ms: Ms


class Line(_LineRequired, total=False):
    """A source line's figures per step. `wall_ms` is a union of intervals; `gpu_ms` is null where
    GPU events were not observed; `precision` says how exact the line is."""
    count: Annotated[float, msgspec.Meta(ge=0)]
    backward_gpu_ms: Ms | None
    shapes: list[OpInputs] | None
    alloc_bytes: int | None
    peak_bytes: int | None
    memory_device: str | None
    top_ops: list[NamedWork]  # the outermost operators by name (line_work.py): the hover's list
    top_kernels: list[NamedWork] | None
    file_id: FileId
    compiled: CompiledLine
    ops: Count  # CPU operators the line's own thread ran inside it, per step (all levels: distortion.py)
    profiler_ms_estimate: Ms | None  # an estimate: the line's share of the profiler's cost (distortion.py)
    median_call_ms: Ms  # a line called more than once a step: its median call (line_calls.py)
    few_calls: FewCalls | None  # ... and the few slowest calls that carry half its time, if any


class _RegionRequired(TypedDict):
    label: str
    file: str | None
    line: int | None
    wall_ms: Ms
    gpu_ms: Ms | None


class Region(_RegionRequired, total=False):
    """A labelled region of the trace (Stepscope's `ss:` labels and the program's own). `own_ms`: its
    wall time without the lines and regions nested in it and without backward ops (ownership.py): what
    a region that wraps other work (an optimizer's step around its closure) does itself."""
    cpu_total_ms: Ms
    kernels: Count
    count: Annotated[float, msgspec.Meta(ge=0)]
    file_id: FileId | None
    own_ms: Ms


class _FindingRequired(TypedDict):
    kind: str
    file: str | None
    line: int | None
    observation: str
    hypothesis: str
    next_check: str


class Variant(TypedDict):
    """A change `stepscope try` can measure for a finding (docs/try.md); `applicable` false: an
    experiment that answers a question, not a change to keep."""
    name: str
    title: str
    description: str
    applicable: bool


class Finding(_FindingRequired, total=False):
    """What the trace suggests trying next (docs/findings.md), and the variants `stepscope try` can
    measure for it (`variants`), or why there is none (`variants_reason`)."""
    severity: str
    figures: dict[str, Any]
    file_id: FileId | None
    variants: list[Variant]
    variants_reason: str | None


class _StepRequired(TypedDict):
    name: str
    ms: Ms


class Step(_StepRequired, total=False):
    """One active step: its elapsed time, and its CPU span (null for steps read from GPU markers)."""
    cpu_ms: Ms | None


class _RankRequired(TypedDict):
    trace: AbsolutePath
    rank: int | None
    ms_per_step: Ms | None
    steps: Count
    gpu_ms: Ms | None
    collective_ms: Ms | None
    lines: Annotated[list[Line], msgspec.Meta(max_length=10)]
    regions: Annotated[list[Region], msgspec.Meta(max_length=10)]
    slowest: bool


class RankEntry(_RankRequired, total=False):
    """One rank of a folder of per-rank traces: its own figures, from its own trace; where it ran
    (`node`, `host`), its clock's offset to the reference rank's and how late it started the
    collectives the ranks share (clocks.py, nodes.py). `slowest` marks the rank the others wait for
    (ranks.py)."""
    window_ms: Ms | None
    host_collective_ms: Ms | None
    node: str | None
    host: str | None
    clock_offset_us: float | None
    late_ms: Ms | None


class RankLine(TypedDict, total=False):
    """A line of the rank the others wait for: its self time per step there (`self_ms`, without the
    lines nested in it, as a line's `cpu_self_ms`) and on the other ranks (`others_ms`, their median)."""
    file: str
    line: int
    self_ms: Ms
    others_ms: Ms
    file_id: FileId | None


class RankWait(TypedDict, total=False):
    """The rank the others wait for, read from the ranks' time in collectives (`by`: `gpu` kernels or
    `host` operations), and its lines that differ most from the other ranks' (`lines`)."""
    rank: int | None
    by: Literal["gpu", "host"]
    collective_ms: dict[str, Ms]
    extra_ms: Ms
    lines: list[RankLine]


class NodeEntry(TypedDict):
    """One node of a folder of per-rank traces (nodes.py): its ranks, and its ranks' own figures."""
    node: str | None
    host: str | None
    ranks: list[int | None]
    ms_per_step: Ms | None
    longest_step_rank: int | None  # whose ms/step `ms_per_step` is (the report's slowest_rank is another answer)
    late_ms: Ms | None
    clock_offset_us: float | None


class ClockHost(TypedDict):
    """One clock (a host, or a rank whose host is unknown) and its offset to the reference's."""
    host: str | None
    ranks: list[int | None]
    offset_us: float | None
    bound_us: Annotated[list[float], msgspec.Meta(min_length=2, max_length=2)] | None
    residual_us: float | None
    collectives: Count


class ClockCheck(TypedDict):
    """The alignment's bound between ranks that share one clock (it must hold 0)."""
    bound_us: Annotated[list[float], msgspec.Meta(min_length=2, max_length=2)]
    residual_us: float
    holds: bool
    collectives: Count


class Clocks(TypedDict):
    """The hosts' clocks, aligned from the collectives the ranks share (clocks.py)."""
    method: Literal["one host", "collectives", "not aligned"]
    by: Literal["gpu", "host"] | None
    reference_rank: int | None
    hosts: list[ClockHost]
    check: ClockCheck | None


class Gpu(TypedDict):
    observed: bool
    reason: str | None


class _StartupRequired(TypedDict):
    to_first_step_ms: Ms | None
    first_steps_ms: list[float]


class Startup(_StartupRequired, total=False):
    clock: str


class Schedule(TypedDict, total=False):
    wait: int | None
    warmup: int | None
    active: int | None
    repeat: int | None
    source: str


class Window(TypedDict, total=False):
    """The active window: its length, steps, and what the figures are per (`step` or `window`).
    `mean_step_ms` (the window's length over its steps; null without steps) is the step that
    per-step figures and every share are of."""
    ms: Ms
    steps: Count
    per: Literal["step", "window"]
    mean_step_ms: Ms | None
    events: Count
    trace_bytes: int | None
    gpu_ms: Ms | None
    collective_ms: Ms | None
    host_collective_ms: Ms | None


class Attribution(TypedDict, total=False):
    gpu_events: Count
    gpu_unlinked: Count  # GPU events with no launch call in the trace
    gpu_launched_before: Count  # of those, launched before the trace's first launch call (links.py)
    backward_link: str


class CompileEvent(TypedDict, total=False):
    """A compilation or a graph break that torch recorded, with the step and phase it happened in."""
    file: str | None
    line: int | None
    file_id: FileId | None
    function: str | None
    step: int | None
    phase: str
    reasons: list[str]
    reason: str | None
    detail: str | None
    recompile: bool


class CompiledCode(TypedDict, total=False):
    """Compiled graphs in the window and how much of their work reached the lines (compiled_code.py)."""
    source: str | None
    torch: str | None
    graphs_called: Count
    graphs_without_records: Count
    kernel_calls_per_step: float
    kernel_calls_attributed_per_step: float
    replayed_kernels_per_step: float
    replayed_kernels_attributed_per_step: float
    lines: Count
    stale_frames: Count
    compilations: list[CompileEvent]
    graph_breaks: list[CompileEvent]


class StepContents(TypedDict, total=False):
    replays_graph: bool
    batch_read: bool
    transfer: bool
    forward: bool
    backward: bool
    optimizer_step: bool
    kind: str
    summary: str


class StepCaller(TypedDict, total=False):
    """The code that called the step function: its package (null: the workspace) and module."""
    package: str | None
    module: str | None


class StepDefinition(TypedDict, total=False):
    """Which step the figures are of (step_scope.py): each iteration of the loop at `line` of `file`, or
    each call of `function` (defined at `line`), or one optimizer step of `calls_per_step` calls of it
    (`unit`); `package`: the installed package whose module holds the step (null: the workspace)."""
    kind: Literal["loop", "function"]
    file: str  # as the scenario records it (absolute for a run made here)
    line: LineNumber | None
    file_id: FileId | None
    function: str | None
    unit: Literal["iteration", "call", "optimizer step"]
    unit_reason: str | None
    calls_per_step: Annotated[float, msgspec.Meta(ge=0)] | None
    optimizer_steps_per_step: Annotated[float, msgspec.Meta(ge=0)] | None
    caller: StepCaller | None
    package: str | None


class TimePart(TypedDict):
    """One owner's part of the step's time (step_scope.py): `owner` "you" (`role` "lines": your lines
    and their backward; "loop": your code between them), "package" (`package` names it; `role` "step":
    the lines of its module that holds the step, "caller": its code that calls your step function,
    "loop": its loop that is the step, "optimizer"/"data": torch's own regions, named in `regions`), or
    "unknown"."""
    owner: Literal["you", "package", "unknown"]
    package: str | None
    role: Literal["lines", "loop", "step", "caller", "optimizer", "data", "unknown"]
    ms: Ms
    regions: list[str]


class TimeSplit(TypedDict):
    """Whose code the step's time runs in: parts that add up to `basis_ms`, the mean step (or the
    window, `per` "window")."""
    per: Literal["step", "window"]
    basis_ms: Ms
    parts: list[TimePart]


class MissingLabel(TypedDict, total=False):
    """A region label written in the step's source but absent from the window."""
    file: str
    line: int
    label: str
    file_id: FileId


class Machine(TypedDict, total=False):
    """Which machine the figures came from: `source` says whether from the run's record
    ("scenario") or from the trace; the other keys depend on what either holds."""
    source: str
    device: str
    devices: list[str]
    host: str | None


class Unprofiled(TypedDict, total=False):
    """The step timed without the profiler after the window, in the same process (median of the
    passes; the warm-up passes apart)."""
    ms_per_step: Ms
    passes: Count
    iqr_ms: Ms
    raw_ms: list[Ms]
    warmup_ms: list[Ms]
    warmup_passes: Count
    noisy: bool
    clock: str | None
    mean_ms: Ms  # the passes' total / passes: the pace where step times alternate
    batch_read_ms: Ms | None  # host time of the loop iterable's next() per pass; None: no iterable
    warmup_note: str | None  # why the warm-up after the window is longer than the window's


class RedactedCopy(TypedDict):
    """A trace's redacted copy, written by `profile --redact`: where it is and how many distinct
    secrets of each kind it replaced (never the secrets); `copy` is null, with `problem`, when none
    could be written."""
    trace: AbsolutePath
    copy: AbsolutePath | None
    counts: dict[str, Count]
    problem: str | None


class _ReportRequired(TypedDict):
    schema_version: Annotated[int, msgspec.Meta(ge=1)]
    traces: Annotated[list[AbsolutePath], msgspec.Meta(min_length=1)]
    machine: Machine
    scenario: dict[str, Any]
    schedule: Schedule
    gpu: Gpu
    startup: Startup
    steps: list[Step]
    ms_per_step: Ms | None
    samples_per_s: float | None
    lines: list[Line]
    regions: list[Region]
    findings: list[Finding]
    files: list[FileEntry]


class Report(_ReportRequired, total=False):
    """The report of one trace, or of a run's per-rank traces (`ranks`): see docs/architecture.md."""
    window: Window
    attribution: Attribution
    evidence: dict[str, Any] | None
    notes: list[str]
    source_root: str | None
    missing_labels: list[MissingLabel]
    step_contents: StepContents | None
    compiled_code: CompiledCode | None
    ranks: Annotated[list[RankEntry], msgspec.Meta(min_length=2)]
    slowest_rank: int | None
    rank_wait: RankWait | None
    unprofiled: Unprofiled | None
    distortion: Annotated[float, msgspec.Meta(gt=0)] | None  # profiled / unprofiled ms/step
    nodes: list[NodeEntry]
    clocks: Clocks
    redacted: list[RedactedCopy]  # `profile --redact` only
    step_definition: StepDefinition | None
    time_split: TimeSplit | None


class InvalidReport(UsageError):
    """A document that is not a report of this version, with the first thing wrong in one line."""


def json_schema() -> dict[str, Any]:
    """The JSON Schema of `Report`, as shipped in `report.schema.json`."""
    schema = msgspec.json.schema(Report)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": f"Stepscope report, schema version {SCHEMA_VERSION}", **schema}


def validate(doc: Any) -> Report:
    """`doc` itself when it is a report of this schema version; else `InvalidReport` naming the
    first field that is wrong (`$.lines[3].wall_ms: Expected float >= 0.0`)."""
    version = doc.get("schema_version") if isinstance(doc, dict) else None
    if isinstance(version, int) and version > SCHEMA_VERSION:
        raise InvalidReport(f"the report has schema version {version}; this Stepscope reads version "
                            f"{SCHEMA_VERSION} and earlier: update Stepscope")
    try:
        msgspec.convert(doc, Report)
    except msgspec.ValidationError as e:
        raise InvalidReport(f"not a Stepscope report: {_where_first(str(e))}") from None
    return doc


def _where_first(message: str) -> str:
    """msgspec says `Expected x - at `$.path``; say the path first."""
    what, sep, where = message.partition(" - at ")
    return f"{where.strip('`')}: {what}" if sep else message


def load_report(path: Path) -> Report:
    """Read a `report.json`: upgraded when written before versioning, then validated. Errors are
    one line naming the file."""
    from .. import jsonio

    try:
        doc = jsonio.read_json(path)
    except OSError as e:
        raise UsageError(f"{path}: cannot read the report ({e.strerror or e})") from None
    except ValueError as e:
        raise InvalidReport(f"{path}: not JSON ({e})") from None
    if isinstance(doc, dict) and "schema_version" not in doc:
        doc = attach_files(doc)
    try:
        return validate(doc)
    except InvalidReport as e:
        raise InvalidReport(f"{path}: {e}") from None


# -- the file table ---------------------------------------------------------------------------------
#: report keys whose objects never point at a line of the analysed program (records kept as read)
_NOT_LOCATIONS = ("scenario", "machine", "files")


def _located(value: Any) -> Iterator[dict]:
    """Every object under `value` that points at a source line (`file` and `line` keys), outermost
    first, in document order."""
    if isinstance(value, dict):
        if "file" in value and "line" in value:
            yield value
        for item in value.values():
            if isinstance(item, (dict, list)):
                yield from _located(item)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)):
                yield from _located(item)


def relative_path(path: str, root: str | None) -> FileEntry:
    """`path` as the file table holds it: relative to `root` when it lies under it."""
    if root:
        root_posix = Path(root).as_posix().rstrip("/") or "/"
        path_posix = Path(path).as_posix()
        if path_posix.startswith(root_posix + "/") or root_posix == "/":
            rel = posixpath.relpath(path_posix, root_posix)
            if not rel.startswith(".."):
                return {"path": rel, "in_root": True}
    return {"path": path, "in_root": False}


def attach_files(report: dict) -> dict:
    """The report with `schema_version` first, the file table `files` last, and `file_id` on every
    object that points at a source line. Idempotent; figures are untouched."""
    root = report.get("source_root")
    files: list[FileEntry] = []
    ids: dict[str, int] = {}
    for key, value in report.items():
        if key in _NOT_LOCATIONS:
            continue
        for item in _located(value):
            path = item["file"]
            if not isinstance(path, str) or not path:
                item["file_id"] = None
                continue
            if path not in ids:
                ids[path] = len(files)
                files.append(relative_path(path, root if isinstance(root, str) else None))
            item["file_id"] = ids[path]
    out = {"schema_version": SCHEMA_VERSION}
    out.update((k, v) for k, v in report.items() if k not in ("schema_version", "files"))
    out["files"] = files
    return out


if __name__ == "__main__":  # writes the shipped schema: python -m stepscope.analysis.model
    import sys

    from .. import jsonio

    sys.stdout.buffer.write(jsonio.dumps(json_schema(), indent=True) + b"\n")
