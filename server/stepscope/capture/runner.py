"""Run the agent(s) for a `CaptureRequest`, forward the program's output, stop it on demand, and
say how the capture ended.

Invariants:
- The run folder is new (workspace.new_run); the agents write the traces, timings and scenario
  records into it, this module (with launch.py and rank_records.py) writes spec.json, files.json,
  the program's log(s), status.json and, for a distributed run, the merged scenario.json. Nothing
  else is written. A measure run (`run_measure_process`) runs its processes one after the other in
  one folder, each writing files named for it; its caller writes status.json once, at the end.
- Each agent runs in its own process group, and every group is stopped before `run_capture`
  returns or raises (a timeout, a cancel, a failed rank, an exception in the watch): nothing
  survives a finished run, DataLoader workers included.
- With `nproc` > 1 the ranks start together (launch.py); the first rank to fail ends the run, its
  exit code is the run's and its reason is named by rank.
- Results come from files and the events pipes, never from the program's stdout, which is only
  forwarded (to `output`) and logged.
- On any ending other than success, stray partial files are removed and status.json says why.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TextIO

from .. import jsonio, workspace
from ..agent import protocol
from ..agent.protocol import AgentSpec, Distributed, Entry, Target
from ..errors import NO_STEP, OK, PROGRAM_FAILED, REFUSED, TIMEOUT, USAGE, StepscopeError
from . import launch, rank_records
from .agents import AgentProcess
from .request import CaptureRequest
from .provenance import git_state

AGENT_BOOTSTRAP = Path(__file__).resolve().parent.parent / "agent" / "bootstrap.py"

_AGENT_EXIT_TO_CLI = {
    protocol.EXIT_OK: OK,
    protocol.EXIT_USAGE: USAGE,
    protocol.EXIT_PROGRAM_FAILED: PROGRAM_FAILED,
    protocol.EXIT_REFUSED: REFUSED,
    protocol.EXIT_NO_STEP: NO_STEP,
}


class Cancelled(StepscopeError):
    exit_code = 130

    def __init__(self, message: str, run_dir: Path | None = None):
        super().__init__(message)
        self.run_dir = run_dir  # the run folder that says "cancelled"


@dataclass
class CaptureResult:
    run_dir: Path
    exit_code: int
    reason: str | None
    traces: list[Path] = field(default_factory=list)
    first_run: bool = False
    world_size: int = 1

    @property
    def ok(self) -> bool:
        return self.exit_code == OK


def _file_table(req: CaptureRequest) -> dict:
    files = {"f0": workspace.relpath(req.target_file, req.root)}
    return {"root": str(Path(req.root).resolve()), "files": files}


def _spec(req: CaptureRequest, run: workspace.RunFolder) -> AgentSpec:
    if req.entry_module:
        entry = Entry("module", name=req.entry_module)
    else:
        entry = Entry("script", path=str(req.entry_script or req.target_file))
    opts = req.profile
    distributed = _distributed(req) if req.run.nproc > 1 else None
    if req.measure is not None:
        options = protocol.to_json(req.measure)
    else:
        options = {"cpu_only": opts.cpu_only, "shapes": opts.shapes, "stack": opts.stack, "memory": opts.memory}
    scenario = {
        "step": {"file": str(req.target_file), "line": req.target_line, "function": req.target_function,
                 "kind": "loop" if req.target_function is None else "function", "header": req.step_header},
        "program": {"entry": _entry_record(entry), "args": list(req.args), "cwd": str(req.cwd or req.root),
                    "python": req.python},
        "options": options,
        "note": req.note,
        "git": git_state(req.root),
    }
    if distributed is not None:
        scenario["distributed"] = protocol.to_json(distributed)  # each agent adds its rank in its own record
    return AgentSpec(
        mode=req.mode, run_dir=str(run.path), root=str(Path(req.root).resolve()), entry=entry, argv=tuple(req.args),
        # a step function is named by its qualified name; its def line is for the scenario record only
        target=Target(str(req.target_file), line=None if req.target_function else req.target_line,
                      function=req.target_function),
        scenario=scenario, distributed=distributed, profile=opts if req.measure is None else None,
        measure=req.measure,
    )


def _entry_record(entry: Entry) -> dict:
    """The program's start as the scenario records it: {"kind": "script", "path": ...} or
    {"kind": "module", "name": ...}."""
    return {"kind": "module", "name": entry.name} if entry.kind == "module" else {"kind": "script", "path": entry.path}


def _distributed(req: CaptureRequest) -> Distributed:
    env = {**os.environ, **req.env}
    return Distributed(world_size=req.run.nproc,
                       launcher=f"stepscope --nproc {req.run.nproc} (as torchrun on one node)",
                       omp_num_threads=launch.omp_num_threads(env))


def _agent_env(req: CaptureRequest, process: int = 0) -> dict[str, str]:
    env = {**req.env_defaults, **os.environ, **req.env, protocol.RUN_ENV: "1", "PYTHONUNBUFFERED": "1"}
    if process:
        env[protocol.PROCESS_ENV] = str(process)
    return env


def _agent_outcome(agent: AgentProcess) -> tuple[int, str | None]:
    """The CLI exit code and reason of one agent that has exited (or was stopped after it said why
    it failed: its own "failed" event then wins over the signal that stopped it)."""
    code = _AGENT_EXIT_TO_CLI.get(agent.returncode)
    if code is not None:
        return code, agent.failure_reason()
    failed = agent.failure()
    if failed is not None:
        return _AGENT_EXIT_TO_CLI.get(failed.exit, PROGRAM_FAILED), failed.reason
    if agent.returncode is not None and agent.returncode < 0:
        return PROGRAM_FAILED, f"the program was killed by signal {-agent.returncode}"
    return PROGRAM_FAILED, f"the program's process ended abnormally (status {agent.returncode})"


_EVERY_RANK = object()


def _traces(run: workspace.RunFolder, rank: object = _EVERY_RANK) -> list[Path]:
    """The traces in the run folder (trace.json, trace-1.json, trace-rank1.json, ...), in name order;
    with `rank`, only those that agent wrote (None: the agent of a single-process capture)."""
    found = []
    for path in run.path.iterdir():
        name = protocol.parse_run_file_name(path.name)
        if name.is_trace and (rank is _EVERY_RANK or name.rank == rank):
            found.append(path)
    return sorted(found)


def prepare_run(req: CaptureRequest, into: workspace.RunFolder | None = None) -> workspace.RunFolder:
    """A new run folder holding the request's file table and spec (`into`: an empty run folder
    made for it elsewhere, as `measure --against` does for the revision's side)."""
    run = into or workspace.new_run(req.root, Path(req.target_file).stem, out=req.out)
    jsonio.write_json(run.file(protocol.FILES), _file_table(req), replace=False)
    jsonio.write_json(run.file(protocol.SPEC), _spec(req, run).to_json(), replace=False)
    return run


def run_capture(
    req: CaptureRequest,
    *,
    output: TextIO | None = None,
    on_event: Callable[[protocol.Event], None] | None = None,
    cancel: threading.Event | None = None,
) -> CaptureResult:
    """Run one capture to its end. `output` receives the program's stdout and stderr as text (each
    line prefixed with its rank in a distributed capture)."""
    first_run = not (Path(req.root) / workspace.STATE_DIR / workspace.RUNS_DIR).exists()
    run = prepare_run(req)
    return _run_agents(req, run, first_run=first_run, output=output, on_event=on_event, cancel=cancel)


@dataclass
class ProcessResult:
    """How one process of a measure run ended (its timings record is `timings`, None if absent)."""

    exit_code: int
    reason: str | None
    timings: Path | None

    @property
    def ok(self) -> bool:
        return self.exit_code == OK


def run_measure_process(req: CaptureRequest, run: workspace.RunFolder, process: int, *,
                        output: TextIO | None = None, on_event: Callable[[protocol.Event], None] | None = None,
                        cancel: threading.Event | None = None) -> ProcessResult:
    """Run process `process` of a measure run in its (prepared) run folder, to its end. It writes
    its own files (timings-<k>.json, scenario-<k>.json, program-<k>.log); status.json is the
    caller's, once every process has run. A cancel stops it and raises Cancelled."""
    assert req.measure is not None and req.run.nproc == 1
    cmd = [req.python, str(AGENT_BOOTSTRAP), str(run.file(protocol.SPEC))]
    log = run.file(protocol.run_file_name(protocol.PROGRAM_LOG, None, process))
    try:
        agent = AgentProcess.start(cmd, cwd=str(req.cwd or req.root), env=_agent_env(req, process), log_path=log,
                                   sink=output, on_event=on_event)
    except OSError as e:
        raise StepscopeError(f"cannot start the interpreter {req.python}: {e.strerror}", REFUSED) from e
    timeout_s = req.run.timeout_s
    deadline = time.monotonic() + timeout_s if timeout_s else None
    try:
        ending = launch.watch([agent], cancel=cancel, deadline=deadline)
    finally:
        launch.stop_all([agent])
    for partial in run.path.glob("*.partial"):
        partial.unlink(missing_ok=True)
    if ending.kind == "cancelled":
        raise Cancelled("cancelled; the program and its workers were stopped")
    if ending.kind == "timeout":
        return ProcessResult(TIMEOUT, f"time limit of {timeout_s:g} s reached; the program and its workers were "
                                      "stopped", None)
    code, reason = _agent_outcome(agent)
    timings = run.file(protocol.run_file_name(protocol.TIMINGS, None, process))
    if code == OK and not timings.is_file():
        code, reason = PROGRAM_FAILED, "the passes were timed but no timings record was written"
    return ProcessResult(code, reason, timings if timings.is_file() else None)


def finish_run(run: workspace.RunFolder, status: str, code: int, reason: str | None) -> None:
    """Write the run's status.json (once), after removing stray partial files."""
    _finish(run, status, code, reason)


def _run_agents(req: CaptureRequest, run: workspace.RunFolder, *, first_run: bool, output: TextIO | None,
                on_event: Callable[[protocol.Event], None] | None,
                cancel: threading.Event | None) -> CaptureResult:
    cmd = [req.python, str(AGENT_BOOTSTRAP), str(run.file(protocol.SPEC))]
    nproc = req.run.nproc
    try:
        agents = launch.start_agents(cmd, run=run, cwd=str(req.cwd or req.root), env=_agent_env(req),
                                     nproc=nproc, output=output, on_event=on_event)
    except OSError as e:
        _finish(run, "failed", REFUSED, f"cannot start {req.python}: {e.strerror}")
        raise StepscopeError(f"cannot start the interpreter {req.python}: {e.strerror}", REFUSED) from e

    timeout_s = req.run.timeout_s
    deadline = time.monotonic() + timeout_s if timeout_s else None
    try:
        ending = launch.watch(agents, cancel=cancel, deadline=deadline)
    finally:
        launch.stop_all(agents)  # whatever happened (even an exception here): nothing survives the run
    endings = [_rank_ending(a, ending) for a in agents]
    distributed = nproc > 1
    if distributed:
        rank_records.write_run_records(run, nproc, endings)

    everyone = f"all {nproc} ranks" if distributed else "the program"
    if ending.kind == "cancelled":
        _finish(run, "cancelled", 130, "cancelled", endings, distributed)
        raise Cancelled(f"cancelled; {everyone} and {'their' if distributed else 'its'} workers were stopped",
                        run.path)
    if ending.kind == "timeout":
        reason = (f"time limit of {timeout_s:g} s reached; {everyone} and "
                  f"{'their' if distributed else 'its'} workers were stopped")
        if distributed and ending.running:  # where a hang is: often a rank waiting in a collective
            reason += " (still running: " + ", ".join(f"rank {a.rank} {a.where()}" for a in ending.running) + ")"
        _finish(run, "timeout", TIMEOUT, reason, endings, distributed)
        return CaptureResult(run.path, TIMEOUT, reason, [], first_run, world_size=nproc)

    code, reason = OK, None
    if ending.culprit is not None:
        code, reason = _agent_outcome(ending.culprit)
        if distributed:
            reason = f"rank {ending.culprit.rank}: {reason}"
            if any(a is not ending.culprit for a in ending.running):
                reason += "; the other ranks were stopped"
    else:
        for agent in agents:  # every agent ended well: each must have written its trace
            if not _traces(run, rank=agent.rank):
                code = PROGRAM_FAILED
                reason = "the window completed but no trace was written"
                if distributed:
                    reason = f"rank {agent.rank}: {reason}"
                break
    traces = _traces(run)
    _finish(run, "complete" if code == OK else "failed", code, reason, endings, distributed)
    return CaptureResult(run.path, code, reason, traces if code in (OK, PROGRAM_FAILED) else [], first_run,
                         world_size=nproc)


def _rank_ending(agent: AgentProcess, ending: launch.Ending) -> dict:
    """How one agent ended (`exit` None: it was stopped), for status.json and the scenario record."""
    if agent in ending.running and agent is not ending.culprit:
        why = {"cancelled": "cancelled", "timeout": "time limit reached"}.get(ending.kind)
        if why is None:
            why = f"rank {ending.culprit.rank} failed" if ending.culprit is not None else "run ended"
        return {"exit": None, "reason": f"stopped {agent.where()}: {why}"}
    code, reason = _agent_outcome(agent)
    return {"exit": code, "reason": reason}


def _finish(run: workspace.RunFolder, status: str, code: int, reason: str | None,
            endings: list[dict] | None = None, distributed: bool = False) -> None:
    for partial in run.path.glob("*.partial"):
        partial.unlink(missing_ok=True)
    record: dict = {"status": status, "exit": code, "reason": reason}
    if distributed and endings:
        record["ranks"] = [{"rank": r, **e} for r, e in enumerate(endings)]
    jsonio.write_json(run.file(protocol.STATUS), record, replace=False)
