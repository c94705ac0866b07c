"""The run contract: everything the capture side, the agent and the analysis agree on.

The only module that both sides of the process boundary import (the agent in the user's
interpreter, the CLI / language server in Stepscope's). Stdlib only, Python >= 3.10.

How a run goes:
- The capture side creates a new run folder, writes `spec.json` there (`AgentSpec.to_json`) and
  starts `python <agent folder>/bootstrap.py <run folder>/spec.json` with EVENTS_FD_ENV naming
  the write end of a pipe. A distributed run (`AgentSpec.distributed`) is started by a launcher
  (torchrun, srun, ...) instead, through the copy of the agent in the run folder (AGENT_DIR, run
  as `python <run folder>/agent`); each process reads its rank from the launcher's environment
  (LAUNCHER_ENVIRONMENTS) and sends its events to an append-only events-rank<r>.jsonl there.
- The agent reads the spec (`AgentSpec.from_json`, which refuses a spec of another
  SCHEMA_VERSION or one with a missing or mistyped field), runs the program, sends events (one
  JSON object per line, `encode_event` / `decode_event`) through its `EventSink`, writes its files
  into the run folder, and exits with one of the EXIT_* codes.
- Events: "started" (pid, host, and in a distributed run the rank, the world, the node and the
  launcher's restart count), "step" (before each step begins: index, phase),
  "window-complete" (the schedule's window is recorded: active steps, traces written), "failed"
  (reason and agent exit code; the program raised, ended too early, or was refused), "finished"
  (the agent's exit code and the traces written; the last event).

Run folder file names (`run_file_name` writes them, `parse_run_file_name` reads them back): a
distributed capture's rank r writes only files named for it (trace-rank1.json, scenario-rank1.json,
files-rank1.json, events-rank1.jsonl), so no two processes ever write the same path (nor two nodes:
ranks are the job's, not the node's); a profile with `repeat` > 1 writes one trace per cycle
(trace.json, trace-1.json, ...; trace-rank1-1.json); a measure run with several processes
(`--runs R`) starts them one after the other in one run folder, process k (PROCESS_ENV) naming its
files with cycle k (timings-1.json, scenario-1.json, ...; under a launcher timings-rank1-1.json,
events-rank1-1.jsonl, ...).

Modes: "profile" (torch.profiler on the schedule, then as many steps again timed without it:
`timings.json`) and "measure" (no profiler: warm-up passes, then timed passes, each pass's value
kept; `timings.json`). A timings record is
`{"warmup_ms": [...], "raw_ms": [...], "values": [...] | null, "clock": str, ...}`.

Region labels: `ss:<file-id>:<line>` labels a statement, `ss:<file-id>:<line>:next` the loop
header's batch fetch; `region_label` / `fetch_label` write them, `parse_label` reads them back and
accepts nothing else.

Options are dataclasses whose fields are declared with `option(...)`: the default, the minimum, the
CLI flag, the editor setting and the help live on the field, once. The agent reads the values; the
capture side's `capture/options.py` turns the same declaration into `stepscope profile` flags and
the check of the editor's `stepscope.profile.*` settings.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, Union

SCHEMA_VERSION = 3  # 2: mode "measure" and its options; 3: runs started by a launcher (Distributed, placement)

# -- environment --------------------------------------------------------------------------------
EVENTS_FD_ENV = "STEPSCOPE_EVENTS_FD"  # the agent's events pipe (taken out of the program's environment)
RUN_ENV = "STEPSCOPE_RUN"  # set to "1" in the program's environment
PROCESS_ENV = "STEPSCOPE_PROCESS"  # k: the k-th process of a measure run (`--runs`); unset for the first


@dataclass(frozen=True)
class LauncherEnvironment:
    """Where one launcher puts a process's place in the job: the environment variables of its
    rank, local rank (on its node), node, world size and restart count (None: not given); `marker`:
    a variable only this launcher sets, where it shares its rank variable with another."""

    name: str
    rank: str
    local_rank: str
    node: str | None
    world_size: str
    restart: str | None
    marker: str | None = None


#: The launchers whose environment gives a process its rank, in the order they are looked for: a
#: torchrun started by srun (one task per node) sees both, and its workers' ranks are torchrun's.
#: deepspeed's launcher sets torchrun's variables and its node as CROSS_RANK (which torchrun does not
#: set); accelerate launch runs torchrun itself, or one process with no rank.
LAUNCHER_ENVIRONMENTS = (
    LauncherEnvironment("deepspeed", "RANK", "LOCAL_RANK", "CROSS_RANK", "WORLD_SIZE", None, marker="CROSS_RANK"),
    LauncherEnvironment("torchrun", "RANK", "LOCAL_RANK", "GROUP_RANK", "WORLD_SIZE", "TORCHELASTIC_RESTART_COUNT"),
    LauncherEnvironment("srun", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_NTASKS", "SLURM_RESTART_COUNT"),
    LauncherEnvironment("mpirun (Open MPI)", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", None,
                        "OMPI_COMM_WORLD_SIZE", None),
)


@dataclass(frozen=True)
class Placement:
    """A process's place in a distributed job, read from its launcher's environment."""

    launcher: str  # LauncherEnvironment.name
    rank: int
    world_size: int | None
    local_rank: int | None
    node: int | None  # the node's index in the job (torchrun's GROUP_RANK, SLURM_NODEID)
    restart: int  # how many times the launcher restarted the group before this process (0: never)


class PlacementError(ValueError):
    """A launcher variable that is not a whole number; the message is one line naming it."""


def placement(environ: Any) -> Placement | None:
    """This process's place in the job, from the first launcher of LAUNCHER_ENVIRONMENTS whose rank
    variable is set; None when none is (one process, not started by a launcher)."""
    for launcher in LAUNCHER_ENVIRONMENTS:
        if environ.get(launcher.rank, "") == "" or (launcher.marker and environ.get(launcher.marker, "") == ""):
            continue

        def number(name: str | None) -> int | None:
            value = environ.get(name, "") if name else ""
            if value == "":
                return None
            try:
                parsed = int(value)
            except ValueError:
                raise PlacementError(f"{name}={value!r} set by {launcher.name} is not a whole number") from None
            if parsed < 0:
                raise PlacementError(f"{name}={value!r} set by {launcher.name} is negative")
            return parsed

        rank = number(launcher.rank)
        assert rank is not None
        return Placement(launcher.name, rank, number(launcher.world_size), number(launcher.local_rank),
                         number(launcher.node), number(launcher.restart) or 0)
    return None

# -- agent exit codes (the capture side maps them to the CLI's) --------------------------------
EXIT_OK = 0
EXIT_USAGE = 2  # the run asked for something the program cannot give (a `--value` it cannot evaluate)
EXIT_PROGRAM_FAILED = 3
EXIT_REFUSED = 5
EXIT_NO_STEP = 6
EXIT_AGENT_ERROR = 70

# -- run folder ---------------------------------------------------------------------------------
SPEC = "spec.json"  # what the capture side asked the agent for (AgentSpec)
TRACE = "trace.json"  # the profiler's trace (profile mode), one per repeat cycle
FILES = "files.json"  # file table: file id -> workspace-relative path
SCENARIO = "scenario.json"  # what the run was: machine, schedule, what the step is made of
PROGRAM_LOG = "program.log"  # the program's stdout and stderr
REPORT = "report.json"  # the analysis
TIMELINE = "timeline.json"  # the trace panel's timeline of each trace (written by the analysis, named as its trace)
STATUS = "status.json"  # how the run ended (written by the capture side)
SOURCES = "sources.json"  # the text of the files a run made in the editor measured (the editor writes it)
COMPILE = "compile.json"  # torch.compile's records: kernel provenance, graph breaks, compilations (compile_log.py)
TIMINGS = "timings.json"  # steps timed without the profiler (both modes), one per rank and process
MEASURE = "measure.json"  # a measure run's result, the `measure --json` document (capture side)
TRY = "try.json"  # a try run's change, what it came from and the run it was measured against (capture side)
EVENTS = "events.jsonl"  # a launched agent's events, one JSON line each, appended (events-rank<r>.jsonl)
AGENT_DIR = "agent"  # a launched run's copy of the agent: `python <run>/agent` is the launchers' program

#: The run folder's JSON records: never a trace, whatever folder they are found in.
RECORDS = frozenset({SPEC, FILES, SCENARIO, REPORT, TIMELINE, STATUS, COMPILE, TIMINGS, MEASURE, SOURCES, TRY})
#: The names a trace of a run folder may have, before its rank and cycle suffixes.
TRACE_NAMES = frozenset({TRACE, TRACE + ".gz"})

_SUFFIXES = re.compile(r"(?P<stem>.*?)(?:-rank(?P<rank>[0-9]+))?(?:-(?P<cycle>[0-9]+))?")


@dataclass(frozen=True)
class RunFileName:
    """A run folder file name read back: `name` as written before the suffixes ("trace.json"),
    the rank that wrote it (None: a single-process capture) and the repeat cycle (0: the first)."""

    name: str
    rank: int | None = None
    cycle: int = 0

    @property
    def is_trace(self) -> bool:
        return self.name in TRACE_NAMES


def run_file_name(name: str, rank: int | None = None, cycle: int = 0) -> str:
    """The run folder file `name` as rank `rank` writes it for repeat cycle `cycle`:
    ("trace.json", 1, 2) -> "trace-rank1-2.json"; ("trace.json", None, 0) -> "trace.json"."""
    stem, dot, ext = name.partition(".")
    rank_part = f"-rank{rank}" if rank is not None else ""
    cycle_part = f"-{cycle}" if cycle else ""
    return f"{stem}{rank_part}{cycle_part}{dot}{ext}"


def parse_run_file_name(file_name: str) -> RunFileName:
    """The inverse of `run_file_name`: "trace-rank1-2.json" -> RunFileName("trace.json", 1, 2).
    A name without suffixes, or without an extension (every run file has one), reads back as itself."""
    stem, dot, ext = file_name.partition(".")
    if not dot:
        return RunFileName(file_name)
    match = _SUFFIXES.fullmatch(stem)
    assert match is not None  # every part of the pattern is optional
    rank = match.group("rank")
    cycle = match.group("cycle")
    return RunFileName(f"{match.group('stem')}{dot}{ext}", int(rank) if rank is not None else None,
                       int(cycle) if cycle is not None else 0)


# -- region labels ------------------------------------------------------------------------------
LABEL_PREFIX = "ss:"
_LABEL = re.compile(r"ss:([A-Za-z0-9_]+):([0-9]+)(:next)?")


@dataclass(frozen=True)
class Label:
    """A Stepscope region label read back: the statement at `line` of file `file_id`; `is_next`:
    the batch fetch of the loop whose header is at `line`."""

    file_id: str
    line: int
    is_next: bool = False


#: the closure an optimizer's step runs (`optimizer.step(closure)`: Lightning's training_step and
#: backward), labelled so that the optimizer's own update is told apart from the work it wraps
CLOSURE_LABEL = "ss:optimizer-closure"


def region_label(file_id: str, line: int) -> str:
    return f"{LABEL_PREFIX}{file_id}:{line}"


def fetch_label(file_id: str, line: int) -> str:
    return f"{LABEL_PREFIX}{file_id}:{line}:next"


def parse_label(name: str) -> Label | None:
    """The label `region_label` or `fetch_label` wrote, or None for any other name."""
    match = _LABEL.fullmatch(name)
    if match is None:
        return None
    return Label(match.group(1), int(match.group(2)), match.group(3) is not None)


# -- options ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Option:
    """How one option is offered to users (the metadata of an `option` field).

    `negated`: the flag and the setting say the opposite of the field (`--all-lines` and the
    setting `allLines` turn `bound_regions` off). `zero`: what the value 0 means ("no limit").
    """

    help: str
    flag: str | None = None  # "--wait"; None: no CLI flag
    setting: str | None = None  # the editor's key under stepscope.profile; None: not a setting
    minimum: int | float | None = None
    negated: bool = False
    zero: str | None = None
    unit: str | None = None  # "seconds"

    def check(self, value: Any, kind: type) -> bool:
        """Whether `value` is a valid value of this option (`kind`: the type of its default)."""
        if kind is bool:
            return isinstance(value, bool)
        if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
            return False
        if kind is float and not math.isfinite(value):
            return False
        return self.minimum is None or value >= self.minimum


class OptionError(ValueError):
    """An option got a value its declaration refuses; each surface words it with its own name
    for the option (a flag, a setting)."""

    def __init__(self, name: str, option: Option, kind: type, value: Any):
        super().__init__(f"{name} must be {describe_rule(option, kind)}, got {value!r}")
        self.name, self.option, self.kind, self.value = name, option, kind, value


def describe_rule(option: Option, kind: type, *, ascii_only: bool = False) -> str:
    """What a valid value is, in words: "an integer ≥ 1", "true or false"."""
    if kind is bool:
        return "true or false"
    at_least = ">=" if ascii_only else "≥"
    what = "a whole number" if ascii_only and kind is int else "an integer" if kind is int else "a number"
    if option.unit:
        what += f" of {option.unit}"
    rule = what if option.minimum is None else f"{what} {at_least} {option.minimum:g}"
    return f"{rule} (0: {option.zero})" if option.zero else rule


def option(default: Any, help: str, **how: Any) -> Any:
    """A field of an options dataclass: its default and how it is offered (see `Option`)."""
    return field(default=default, metadata={"option": Option(help, **how)})


def check_options(options: Any) -> None:
    """Raise OptionError for the first field of `options` whose value its declaration refuses."""
    for f in dataclasses.fields(options):
        declared = f.metadata.get("option")
        if declared is not None and not declared.check(getattr(options, f.name), type(f.default)):
            raise OptionError(f.name, declared, type(f.default), getattr(options, f.name))


@dataclass(frozen=True)
class Schedule:
    """torch.profiler's schedule: `wait` steps, `warmup` steps, `active` steps, `repeat` times."""

    wait: int = option(1, "steps skipped before the profiler starts", flag="--wait", setting="wait", minimum=0)
    warmup: int = option(2, "steps the profiler runs but discards, so one-time costs stay out of the result",
                         flag="--warmup", setting="warmup", minimum=0)
    active: int = option(5, "steps recorded and measured", flag="--active", setting="active", minimum=1)
    repeat: int = option(1, "how many wait/warm-up/active cycles to record", flag="--repeat", setting="repeat",
                         minimum=1)

    def __post_init__(self) -> None:
        check_options(self)

    @property
    def cycle(self) -> int:
        return self.wait + self.warmup + self.active

    def phase(self, index: int) -> str:
        """The phase of step `index` (0-based): "wait", "warmup", "active", or "after" the window."""
        if index >= self.cycle * self.repeat:
            return "after"
        k = index % self.cycle
        if k < self.wait:
            return "wait"
        if k < self.wait + self.warmup:
            return "warmup"
        return "active"


@dataclass(frozen=True)
class ProfileOptions:
    """What a profile run records (mode "profile")."""

    schedule: Schedule = field(default_factory=Schedule)
    depth: int = option(2, "how many workspace calls below the step get per-line regions (0: the step's own "
                        "lines only)", flag="--depth", setting="depth", minimum=0)
    line_regions: bool = option(True, "mark steps only, no per-line regions (to measure their overhead)",
                                flag="--no-line-regions", negated=True)
    bound_regions: bool = option(True, "split every workspace function into lines, even one called at least 16 "
                                 "times a step with 256 regions or more (by default such a function is left "
                                 "whole)", flag="--all-lines", setting="allLines", negated=True)
    light: bool = option(False, "light capture: the step's lines, kernels, copies and their launches, without "
                         "recording every CPU operator (the profiler moves the step less; no operator figures, "
                         "shapes or backward by line)", flag="--light", setting="light")
    shapes: bool = option(False, "record input shapes (adds overhead)", flag="--shapes", setting="shapes")
    stack: bool = option(False, "record Python stacks (adds overhead)", flag="--stack", setting="stack")
    memory: bool = option(False, "record memory (adds overhead)", flag="--memory", setting="memory")
    compile_records: bool = option(True, "don't record torch.compile's kernel provenance (the compiled kernels' "
                                   "source lines; adds compile time, not step time)",
                                   flag="--no-compile-records", negated=True)
    cpu_only: bool = option(False, "collect CPU activity only, even on a GPU machine", flag="--cpu-only")
    run_to_end: bool = option(False, "let the program finish after the window", flag="--run-to-end")

    def __post_init__(self) -> None:
        check_options(self)


@dataclass(frozen=True)
class MeasureOptions:
    """What a measure run times (mode "measure"): no profiler, no regions, only step boundaries."""

    warmup: int = option(5, "passes run first and reported apart; no figure includes them", flag="--warmup",
                         setting="warmup", minimum=0)
    passes: int = option(30, "passes timed in each process", flag="--passes", setting="passes", minimum=1)
    seed: int = option(0, "seed of Python's random, numpy and torch before the program starts, so that two runs "
                          "compute the same values (a seed the program sets itself still applies)",
                       flag="--seed", setting="seed", minimum=0)
    value: str | None = None  # `--value EXPR`, evaluated in the step's frame after each pass (None: `loss`)

    def __post_init__(self) -> None:
        check_options(self)

    @property
    def schedule(self) -> Schedule:
        """The clock's schedule: the warm-up passes, then the timed ones, once."""
        return Schedule(wait=0, warmup=self.warmup, active=self.passes, repeat=1)


#: in `--value`, the word `return` is what a step function's call returned (`return`, `return["acc"]`)
RETURN_WORD = "return"
RETURN_NAME = "__stepscope_return__"


def value_source(expression: str) -> str:
    """`--value`'s text as a Python expression: each `return` becomes `RETURN_NAME`, the name the agent
    binds to the step function's return value. Raises SyntaxError where the result is no expression."""
    import io
    import tokenize

    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(expression.strip()).readline))
    except (tokenize.TokenError, IndentationError) as e:
        raise SyntaxError(str(e.args[0]) if e.args else "not an expression") from None
    source = expression.strip()
    if any(t.type == tokenize.NAME and t.string == RETURN_WORD for t in tokens):
        source = tokenize.untokenize((t.type, RETURN_NAME if t.type == tokenize.NAME and t.string == RETURN_WORD
                                      else t.string) for t in tokens).strip()
    compile(source, "<--value>", "eval")
    return source


def uses_return(expression: str) -> bool:
    """Whether `--value`'s text reads a step function's return value (its word `return`)."""
    return RETURN_NAME in value_source(expression)


# -- the spec -----------------------------------------------------------------------------------
MODES = ("profile", "measure")


class SpecError(ValueError):
    """A spec (or an event) that does not follow this contract; the message is one line."""


@dataclass(frozen=True)
class Entry:
    """How the program starts: `python PATH` (kind "script") or `python -m NAME` (kind "module")."""

    kind: str
    path: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if (self.kind, self.path is None, self.name is None) not in (("script", False, True), ("module", True, False)):
            raise SpecError(f"entry: a script needs a path, a module a name (got {self.kind!r})")


@dataclass(frozen=True)
class Target:
    """The step: the loop whose header is at `line` of `path`, or each call of `function`. A step
    function's step is one optimizer step when the program steps an optimizer (its calls under
    gradient accumulation: agent/optimizer_steps.py), unless `micro_batch` says each call is one."""

    path: str
    line: int | None = None
    function: str | None = None
    micro_batch: bool = False

    def __post_init__(self) -> None:
        if (self.line is None) == (self.function is None):
            raise SpecError("target: exactly one of line and function")
        if self.micro_batch and self.function is None:
            raise SpecError("target: micro_batch applies to a step function")


@dataclass(frozen=True)
class Distributed:
    """A run started by a launcher: each agent reads its rank from the launcher's environment
    (`placement`). `launcher` is the command as the capture side composed or was given it;
    `world_size` is known up front only when the capture side chose it (`--nproc`), else each rank
    records the one its launcher gave it. `launcher` None: the user puts the agent into a
    launcher's command line by hand."""

    world_size: int | None
    launcher: str | None


@dataclass(frozen=True, kw_only=True)
class AgentSpec:
    """What the capture side asks the agent for (`spec.json`). Every field is written, always: the
    agent applies no default of its own."""

    schema_version: int = SCHEMA_VERSION
    mode: str
    run_dir: str  # absolute
    root: str  # the workspace root (absolute): its files are instrumented and named in the file table
    entry: Entry
    argv: tuple[str, ...]
    target: Target
    scenario: dict[str, Any]  # the capture side's part of the scenario record, copied into it as is
    distributed: Distributed | None
    profile: ProfileOptions | None  # mode "profile"
    measure: MeasureOptions | None = None  # mode "measure"

    def __post_init__(self) -> None:
        if self.schema_version != SCHEMA_VERSION:
            raise SpecError(f"the spec is of schema version {self.schema_version}, this agent reads "
                            f"version {SCHEMA_VERSION}")
        if self.mode not in MODES:
            raise SpecError(f"mode {self.mode!r} is not one of {', '.join(MODES)}")
        if self.mode == "profile" and self.profile is None:
            raise SpecError("mode 'profile' needs its profile options")
        if self.mode == "measure" and self.measure is None:
            raise SpecError("mode 'measure' needs its measure options")

    def to_json(self) -> dict[str, Any]:
        return to_json(self)

    @classmethod
    def from_json(cls, doc: Any) -> "AgentSpec":
        return from_json(cls, doc, "spec")


# -- events -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StartedEvent:
    """The agent runs (before the program starts). In a distributed run: its rank, the world size
    and node its launcher gave it, and `restart`: how many times the launcher restarted the group
    before this process (an agent of a restarted group runs nothing: it only says so)."""

    name: ClassVar[str] = "started"
    pid: int
    host: str = ""
    rank: int | None = None
    world_size: int | None = None
    node: int | None = None
    restart: int = 0


@dataclass(frozen=True)
class StepEvent:
    """Step `index` (0-based) is about to begin, in `phase` (Schedule.phase)."""

    name: ClassVar[str] = "step"
    index: int
    phase: str


@dataclass(frozen=True)
class WindowCompleteEvent:
    name: ClassVar[str] = "window-complete"
    active_steps: int
    traces: tuple[str, ...] = ()


@dataclass(frozen=True)
class FailedEvent:
    """Why the run failed (`exit`: the agent exit code); the agent then exits with that code. `at`:
    when, in seconds since the epoch on the agent's host (which rank failed first, across ranks
    whose events come from files)."""

    name: ClassVar[str] = "failed"
    reason: str
    exit: int
    at: float = 0.0


@dataclass(frozen=True)
class FinishedEvent:
    """The agent's last event: its exit code and the traces it wrote."""

    name: ClassVar[str] = "finished"
    exit: int
    traces: tuple[str, ...] = ()


Event = Union[StartedEvent, StepEvent, WindowCompleteEvent, FailedEvent, FinishedEvent]
EVENT_TYPES: dict[str, type] = {t.name: t for t in typing.get_args(Event)}


def encode_event(event: Event) -> str:
    """One event as its JSON line (with the newline)."""
    return json.dumps({"event": event.name, **to_json(event)}) + "\n"


def decode_event(line: str) -> Event | None:
    """The event of one JSON line; None for a line that is not an event of this contract (an
    event of a newer agent is skipped, not fatal)."""
    try:
        doc = json.loads(line)
        kind = EVENT_TYPES[doc.pop("event")]
        return from_json(kind, doc, f"event {kind.name!r}")
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


class EventSink(Protocol):
    """Where the agent's events go: the pipe the capture side gave it (`PipeSink`), or, under a
    launcher that cannot pass a pipe (torchrun, srun, other nodes), the append-only
    `events-rank<r>.jsonl` in the run folder (`FileSink`); `open_event_sink` chooses."""

    def send(self, event: Event) -> None: ...

    def close(self) -> None: ...


class PipeSink:
    """JSON lines on the inherited file descriptor. If the capture side went away, events are
    dropped and the program keeps running."""

    def __init__(self, fd: int) -> None:
        self._out: Any = os.fdopen(fd, "w", buffering=1, encoding="utf-8")

    def send(self, event: Event) -> None:
        if self._out is None:
            return
        try:
            self._out.write(encode_event(event))
        except (OSError, ValueError):
            self._out = None

    def close(self) -> None:
        if self._out is not None:
            try:
                self._out.close()
            except OSError:
                pass
            self._out = None


class FileSink:
    """JSON lines appended to a file of the run folder, each written whole with one write (a
    reader polling the file sees whole lines, or a last line still being written). Appended, never
    truncated: the agents of a group the launcher restarted add their lines after the first ones.
    If the file cannot be written, events are dropped and the program keeps running."""

    def __init__(self, path: str) -> None:
        self._fd: int | None
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError:
            self._fd = None

    def send(self, event: Event) -> None:
        if self._fd is None:
            return
        try:
            os.write(self._fd, encode_event(event).encode("utf-8"))
        except OSError:
            self.close()

    def close(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None


class NullSink:
    """No events (the agent run by hand, without a run folder to write them to)."""

    def send(self, event: Event) -> None:
        pass

    def close(self) -> None:
        pass


def open_event_sink(environ: Any = None, *, run_dir: str | None = None, rank: int | None = None,
                    cycle: int = 0) -> EventSink:
    """The pipe the capture side set up (taken out of the environment so that the program's own
    child processes never inherit it); else, for a launched run (`run_dir` given), the rank's
    events file in the run folder (`cycle` k > 0: a measure run's k-th process's,
    events-rank<r>-<k>.jsonl); else no events."""
    environ = os.environ if environ is None else environ
    fd = environ.pop(EVENTS_FD_ENV, None)
    if fd:
        return PipeSink(int(fd))
    if run_dir is not None:
        return FileSink(os.path.join(run_dir, run_file_name(EVENTS, rank, cycle)))
    return NullSink()


# -- JSON <-> dataclasses -----------------------------------------------------------------------
def to_json(obj: Any) -> Any:
    """A dataclass of this module as JSON-ready data (tuples become lists)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_json(v) for k, v in obj.items()}
    return obj


def from_json(cls: type, doc: Any, where: str) -> Any:
    """An instance of the dataclass `cls` from JSON data, every field present and of its declared
    type; SpecError (one line, naming the field) otherwise."""
    if not isinstance(doc, dict):
        raise SpecError(f"{where} must be an object, got {type(doc).__name__}")
    hints = typing.get_type_hints(cls)
    fields = [f for f in dataclasses.fields(cls) if f.init]
    unknown = sorted(set(doc) - {f.name for f in fields})
    if unknown:
        raise SpecError(f"{where}: unknown field {unknown[0]!r}")
    values = {}
    for f in fields:
        if f.name not in doc:
            raise SpecError(f"{where}: missing field {f.name!r}")
        values[f.name] = _value(hints[f.name], doc[f.name], f"{where}.{f.name}")
    try:
        return cls(**values)
    except OptionError as e:
        raise SpecError(f"{where}.{e}") from None


def _value(hint: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        (inner,) = [o for o in options if o is not type(None)]
        return _value(inner, value, where)
    if dataclasses.is_dataclass(hint):
        return from_json(hint, value, where)
    if origin is tuple:
        if not isinstance(value, list):
            raise SpecError(f"{where} must be a list, got {type(value).__name__}")
        (item, _) = typing.get_args(hint)
        return tuple(_value(item, v, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is dict:
        if not isinstance(value, dict):
            raise SpecError(f"{where} must be an object, got {type(value).__name__}")
        return value
    if hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, hint)
    if not ok:
        raise SpecError(f"{where} must be {hint.__name__}, got {type(value).__name__}")
    return value

