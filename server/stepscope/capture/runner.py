"""Run the agent for a `CaptureRequest`, directly or through a launcher, forward the program's
output, stop it on demand, and say how the capture ended.

Invariants:
- The run folder is new (workspace.new_run); the agents write the traces, timings and scenario
  records into it, this module (with launch.py, launchers/ and rank_records.py) writes spec.json,
  files.json, the program's log, status.json and, for a launched run, the agent's copy and the
  merged scenario.json. Nothing else is written. A measure run (`run_measure_process`) runs its
  processes one after the other in one folder, each writing files named for it; its caller writes
  status.json once, at the end.
- A plain run's agent runs in its own process group; a launched run's launcher leads its own
  session. Every group is stopped before `run_capture` returns or raises (a timeout, a cancel, a
  failed rank, an exception in the watch): nothing survives a finished run, DataLoader workers
  included (launchers/external.py says how far that reaches on other machines).
- A launched run (`--launcher CMD`, or `--nproc N`: torchrun on this machine) runs the run folder's
  copy of the agent (`python <run>/agent`), which reads its rank from the launcher's environment;
  the first rank to fail ends the run, its exit code is the run's and its reason is named by rank;
  a group the launcher restarts is not recorded (the first attempt's records are kept); a launcher
  that ends before any rank started ends the run with its own last error line as the reason. A
  launched measure run starts the launcher once per process, each rank of process k writing its
  timings-rank<r>-<k>.json.
- Results come from files, the events pipe and the events files, never from the program's stdout,
  which is only forwarded (to `output`) and logged.
- On any ending other than success, stray partial files are removed and status.json says why.
"""

from __future__ import annotations

import os
import shutil
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
from .launchers import command
from .launchers.external import Ending as LaunchEnding
from .launchers.external import LaunchedRun, RankState
from .request import CaptureRequest
from .provenance import git_state

AGENT_FOLDER = Path(__file__).resolve().parent.parent / "agent"
AGENT_BOOTSTRAP = AGENT_FOLDER / "bootstrap.py"

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
    notes: list[str] = field(default_factory=list)  # one line each, about how the run went

    @property
    def ok(self) -> bool:
        return self.exit_code == OK


def _file_table(req: CaptureRequest) -> dict:
    files = {"f0": workspace.relpath(req.target_file, req.root)}
    return {"root": str(Path(req.root).resolve()), "files": files}


def _spec(req: CaptureRequest, run: workspace.RunFolder, distributed: Distributed | None) -> AgentSpec:
    if req.entry_module:
        entry = Entry("module", name=req.entry_module)
    else:
        entry = Entry("script", path=str(req.entry_script or req.target_file))
    opts = req.profile
    if req.measure is not None:
        options = protocol.to_json(req.measure)
    else:
        options = {"cpu_only": opts.cpu_only, "shapes": opts.shapes, "stack": opts.stack, "memory": opts.memory}
    scenario = {
        "step": {"file": str(req.target_file), "line": req.target_line, "function": req.target_function,
                 "kind": "loop" if req.target_function is None else "function", "header": req.step_header,
                 "micro_batch": req.target_micro_batch},
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
                      function=req.target_function, micro_batch=req.target_micro_batch),
        scenario=scenario, distributed=distributed, profile=opts if req.measure is None else None,
        measure=req.measure,
    )


def _entry_record(entry: Entry) -> dict:
    """The program's start as the scenario records it: {"kind": "script", "path": ...} or
    {"kind": "module", "name": ...}."""
    return {"kind": "module", "name": entry.name} if entry.kind == "module" else {"kind": "script", "path": entry.path}


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


def run_label(req: CaptureRequest) -> str:
    """The name part of the run folder: the step's file, or the program's start where the step lies
    outside the workspace (a module of an installed package)."""
    step = Path(req.target_file)
    if Path(workspace.relpath(step, req.root)).is_absolute():
        return Path(req.entry_script).stem if req.entry_script else (req.entry_module or step.stem).split(".")[-1]
    return step.stem


def prepare_run(req: CaptureRequest, into: workspace.RunFolder | None = None, *,
                launched: bool | None = None) -> workspace.RunFolder:
    """A new run folder holding the request's file table and spec (`into`: an empty run folder
    made for it elsewhere, as `measure --against` does for the revision's side), and for a launched
    run (`launched`, by default `req.launched`) the agent's copy (`copy_agent`) and `distributed` in
    the spec: each process reads its rank from its launcher."""
    run = into or workspace.new_run(req.root, run_label(req), out=req.out)
    distributed = None
    if req.launched if launched is None else launched:
        launcher = launcher_words(req)
        distributed = Distributed(world_size=req.run.nproc if req.run.nproc > 1 else None,
                                  launcher=command.shown(launcher) if launcher else None)
    jsonio.write_json(run.file(protocol.FILES), _file_table(req), replace=False)
    jsonio.write_json(run.file(protocol.SPEC), _spec(req, run, distributed).to_json(), replace=False)
    if distributed is not None:
        copy_agent(run)
    return run


# -- a launched run: the run folder, its agent, the command ----------------------------------------
@dataclass(frozen=True)
class PreparedLaunch:
    """A launched run's folder, ready to run: `command` starts it (the launcher's words, then the
    agent), `agent` is the run's copy of the agent, the program every process runs."""

    run: workspace.RunFolder
    command: list[str]
    agent: Path
    launcher: tuple[str, ...]


def copy_agent(run: workspace.RunFolder) -> Path:
    """The run's own copy of the agent (its Python files), which a launcher runs on every node:
    the nodes need neither Stepscope nor the same install, and the agent is the run's version."""
    target = run.file(protocol.AGENT_DIR)
    target.mkdir()
    for source in sorted(AGENT_FOLDER.glob("*.py")):
        shutil.copyfile(source, target / source.name)
    return target


def launcher_words(req: CaptureRequest) -> tuple[str, ...]:
    """The launcher that starts the request's processes: its own, torchrun for `nproc` > 1, or none."""
    return req.launcher or (command.nproc(req.python, req.run.nproc) if req.run.nproc > 1 else ())


def launched_command(req: CaptureRequest, run: workspace.RunFolder) -> PreparedLaunch:
    """The command that starts a prepared launched run: the launcher's words with the run's agent
    as their program (launchers/command.py), or the agent's own command when there is no launcher
    (for the user to put in a launcher's command line)."""
    launcher = launcher_words(req)
    agent = run.file(protocol.AGENT_DIR)
    cmd = command.compose(launcher, agent, req.python) if launcher else [req.python, str(agent)]
    return PreparedLaunch(run, cmd, agent, launcher)


def prepare_launch(req: CaptureRequest) -> PreparedLaunch:
    """A new run folder for a launched run (or for `--prepare`: one whose command the user runs)
    and the command that starts it."""
    return launched_command(req, prepare_run(req, launched=True))


def run_capture(
    req: CaptureRequest,
    *,
    output: TextIO | None = None,
    on_event: Callable[[protocol.Event], None] | None = None,
    cancel: threading.Event | None = None,
) -> CaptureResult:
    """Run one capture to its end. `output` receives the program's stdout and stderr as text (a
    launcher's output as it writes it: torchrun's lines prefixed by rank with `--nproc`)."""
    first_run = not (Path(req.root) / workspace.STATE_DIR / workspace.RUNS_DIR).exists()
    if req.launched:
        return _run_launched(prepare_launch(req), req, first_run=first_run, output=output, on_event=on_event,
                             cancel=cancel)
    run = prepare_run(req)
    return _run_agents(req, run, first_run=first_run, output=output, on_event=on_event, cancel=cancel)


@dataclass
class ProcessResult:
    """How one process of a measure run ended: its timings records by rank (None: a process
    without a rank), those that were written."""

    exit_code: int
    reason: str | None
    timings: dict[int | None, Path]
    notes: list[str] = field(default_factory=list)  # one line each, about how the process went

    @property
    def ok(self) -> bool:
        return self.exit_code == OK


def run_measure_process(req: CaptureRequest, run: workspace.RunFolder, process: int, *,
                        output: TextIO | None = None, on_event: Callable[[protocol.Event], None] | None = None,
                        cancel: threading.Event | None = None) -> ProcessResult:
    """Run process `process` of a measure run in its (prepared) run folder, to its end: the agent,
    or under a launcher (`req.launched`) every rank it starts. It writes its own files
    (timings-<k>.json, scenario-<k>.json, program-<k>.log; a launched run's ranks
    timings-rank<r>-<k>.json, ...); status.json is the caller's, once every process has run. A
    cancel stops it and raises Cancelled."""
    assert req.measure is not None
    if req.launched:
        return _run_launched_process(req, run, process, output=output, on_event=on_event, cancel=cancel)
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
    return ProcessResult(code, reason, {None: timings} if timings.is_file() else {})


def _run_launched_process(req: CaptureRequest, run: workspace.RunFolder, process: int, *, output: TextIO | None,
                          on_event: Callable[[protocol.Event], None] | None,
                          cancel: threading.Event | None) -> ProcessResult:
    """Process `process` of a launched measure run: the launcher, watched as a profile's is; each
    rank must have written its timings record."""
    try:
        launched, ending = _launch_and_watch(launched_command(req, run), req, process, output=output,
                                             on_event=on_event, cancel=cancel)
    except StepscopeError as e:
        return ProcessResult(e.exit_code, str(e), {})
    ranks = launched.in_order()
    running = [s for s in ranks if s.running]
    world = launched.world_size() or (req.run.nproc if req.run.nproc > 1 else None)
    endings = {s.rank: _launched_ending(s, ending, launched.restarted()) for s in ranks}
    rank_records.write_run_records(run, world, endings, process)
    for partial in run.path.glob("*.partial"):
        partial.unlink(missing_ok=True)
    if ending.kind == "cancelled":
        raise Cancelled("cancelled; the launcher and every rank it started were stopped")
    if ending.kind == "timeout":
        return ProcessResult(TIMEOUT, _timeout_words(req, running), {})
    timings = {s.rank: run.file(protocol.run_file_name(protocol.TIMINGS, s.rank, process)) for s in ranks}
    code, reason = _launched_outcome(ending, ranks, running, world, launched.restarted(), launched.last_lines(),
                                     wrote=lambda rank: timings[rank].is_file(),
                                     unwritten="the passes were timed but no timings record was written")
    return ProcessResult(code, reason, {rank: path for rank, path in timings.items() if path.is_file()},
                         _launch_notes(req, run, ranks, process))


def finish_run(run: workspace.RunFolder, status: str, code: int, reason: str | None) -> None:
    """Write the run's status.json (once), after removing stray partial files."""
    _finish(run, status, code, reason)


def _run_agents(req: CaptureRequest, run: workspace.RunFolder, *, first_run: bool, output: TextIO | None,
                on_event: Callable[[protocol.Event], None] | None,
                cancel: threading.Event | None) -> CaptureResult:
    cmd = [req.python, str(AGENT_BOOTSTRAP), str(run.file(protocol.SPEC))]
    try:
        agent = launch.start_agent(cmd, run=run, cwd=str(req.cwd or req.root), env=_agent_env(req), output=output,
                                   on_event=on_event)
    except OSError as e:
        _finish(run, "failed", REFUSED, f"cannot start {req.python}: {e.strerror}")
        raise StepscopeError(f"cannot start the interpreter {req.python}: {e.strerror}", REFUSED) from e

    timeout_s = req.run.timeout_s
    deadline = time.monotonic() + timeout_s if timeout_s else None
    try:
        ending = launch.watch([agent], cancel=cancel, deadline=deadline)
    finally:
        launch.stop_all([agent])  # whatever happened (even an exception here): nothing survives the run
    if ending.kind == "cancelled":
        _finish(run, "cancelled", 130, "cancelled")
        raise Cancelled("cancelled; the program and its workers were stopped", run.path)
    if ending.kind == "timeout":
        reason = f"time limit of {timeout_s:g} s reached; the program and its workers were stopped"
        _finish(run, "timeout", TIMEOUT, reason)
        return CaptureResult(run.path, TIMEOUT, reason, [], first_run)

    code, reason = OK, None
    if ending.culprit is not None:
        code, reason = _agent_outcome(ending.culprit)
    elif not _traces(run):  # the agent ended well: it must have written its trace
        code, reason = PROGRAM_FAILED, "the window completed but no trace was written"
    _finish(run, "complete" if code == OK else "failed", code, reason)
    return CaptureResult(run.path, code, reason, _traces(run) if code in (OK, PROGRAM_FAILED) else [], first_run)


# -- a launched run: watched through its launcher ---------------------------------------------------
def _launch_and_watch(prepared: PreparedLaunch, req: CaptureRequest, process: int = 0, *, output: TextIO | None,
                      on_event: Callable[[protocol.Event], None] | None,
                      cancel: threading.Event | None) -> tuple[LaunchedRun, LaunchEnding]:
    """Start the launcher (for process `process` of a measure run: its own log and events files),
    watch it to its end and stop everything it started. A launcher that cannot start is a usage
    error (StepscopeError); the caller's run folder is to say so."""
    run = prepared.run
    env = {**command.launcher_environment(prepared.launcher), **_agent_env(req, process)}
    try:
        launched = LaunchedRun.start(prepared.command, cwd=str(req.cwd or req.root), env=env, run_dir=run.path,
                                     agent_dir=prepared.agent, sink=output, process=process,
                                     log_path=run.file(protocol.run_file_name(protocol.PROGRAM_LOG, None, process)))
    except OSError as e:
        raise StepscopeError(f"cannot start the launcher {prepared.command[0]!r}: {e.strerror}", USAGE) from e
    timeout_s = req.run.timeout_s
    deadline = time.monotonic() + timeout_s if timeout_s else None
    try:
        ending = launched.watch(cancel=cancel, deadline=deadline, on_event=on_event)
    finally:
        launched.stop()  # whatever happened (even an exception here): nothing survives the run
    return launched, ending


def _timeout_words(req: CaptureRequest, running: list[RankState]) -> str:
    reason = f"time limit of {req.run.timeout_s:g} s reached; the launcher and every rank it started were stopped"
    if running:  # where a hang is: often a rank waiting in a collective
        reason += " (still running: " + ", ".join(f"{s.name} {s.where()}" for s in running) + ")"
    return reason


def _run_launched(prepared: PreparedLaunch, req: CaptureRequest, *, first_run: bool, output: TextIO | None,
                  on_event: Callable[[protocol.Event], None] | None, cancel: threading.Event | None) -> CaptureResult:
    run = prepared.run
    try:
        launched, ending = _launch_and_watch(prepared, req, output=output, on_event=on_event, cancel=cancel)
    except StepscopeError as e:
        _finish(run, "failed", e.exit_code, str(e))
        raise
    ranks = launched.in_order()
    running = [s for s in ranks if s.running]  # as far as the events said when the watch ended
    world = launched.world_size() or (req.run.nproc if req.run.nproc > 1 else None)
    endings = {s.rank: _launched_ending(s, ending, launched.restarted()) for s in ranks}
    rank_records.write_run_records(run, world, endings)

    if ending.kind == "cancelled":
        _finish(run, "cancelled", 130, "cancelled", endings)
        raise Cancelled("cancelled; the launcher and every rank it started were stopped", run.path)
    if ending.kind == "timeout":
        reason = _timeout_words(req, running)
        _finish(run, "timeout", TIMEOUT, reason, endings)
        return CaptureResult(run.path, TIMEOUT, reason, [], first_run, world_size=world or 1)
    code, reason = _launched_outcome(ending, ranks, running, world, launched.restarted(), launched.last_lines(),
                                     wrote=lambda rank: bool(_traces(run, rank=rank)),
                                     unwritten="the window completed but no trace was written")
    _finish(run, "complete" if code == OK else "failed", code, reason, endings)
    return CaptureResult(run.path, code, reason, _traces(run) if code in (OK, PROGRAM_FAILED) else [], first_run,
                         world_size=world or 1, notes=_launch_notes(req, run, ranks))


def _launch_notes(req: CaptureRequest, run: workspace.RunFolder, ranks: list[RankState],
                  process: int = 0) -> list[str]:
    """What the launcher did that the user may not have meant: start one process without a rank,
    or several ranks on a machine, each taking a thread per core."""
    if req.launcher and ranks and all(s.rank is None for s in ranks):
        return [command.one_process_note(req.launcher)]
    note = rank_records.threads_note(run, process)
    return [note] if note else []


def _restart_words(restart: int) -> str:
    return (f"the launcher then restarted the group (restart {restart}), which Stepscope does not record: "
            "the first attempt's records are kept")


def _silent_words(silent: tuple[RankState, ...] | list[RankState]) -> str:
    return "; ".join(f"{s.name} ended {s.where()} without saying why (killed by a signal, or out of memory?)"
                     for s in silent)


def _launched_outcome(ending: LaunchEnding, ranks: list[RankState], running: list[RankState], world: int | None,
                      restart: int, output: list[str], *, wrote: Callable[[int | None], bool],
                      unwritten: str) -> tuple[int, str | None]:
    """The run's exit code and reason from how the launched run ended and what each rank said;
    `output`: the launcher's last lines (a launcher that ended before any rank started is said to
    have ended for the reason they give); `wrote(rank)`: whether a rank that ended well wrote what
    it had to (`unwritten` says what it did not)."""
    if ending.culprit is not None:
        failed = ending.culprit.failed
        assert failed is not None
        reason = f"{ending.culprit.name}: {failed.reason}"
        if ending.silent:
            reason += f"; {_silent_words(ending.silent)}"
        if any(s is not ending.culprit and s not in ending.silent for s in running):
            reason += "; the other ranks were stopped"
        if restart:
            reason += f"; {_restart_words(restart)}"
        return _AGENT_EXIT_TO_CLI.get(failed.exit, PROGRAM_FAILED), reason
    status = f"the launcher exited with status {ending.launcher_exit}"
    if ending.kind == "restarted":
        said = _silent_words(ending.silent) or "a process ended without saying why (killed by a signal, or out of memory?)"
        return PROGRAM_FAILED, f"{said}; {_restart_words(restart)}"
    if not ranks:
        if not ending.launcher_exit:
            return PROGRAM_FAILED, "the launcher ended without starting the agent"
        said = command.last_error_line(output)
        return PROGRAM_FAILED, (f"{status} before any rank started" + (f": {said}" if said else "")
                                + " (its output is above and in program.log)")
    silent = [s for s in ranks if s.finished is None]  # the launcher has ended: so have all its ranks
    if silent:
        return PROGRAM_FAILED, f"{_silent_words(silent)}; {status}"
    if world is not None and len([s for s in ranks if s.rank is not None]) < world:
        missing = sorted(set(range(world)) - {s.rank for s in ranks})
        return PROGRAM_FAILED, (f"only {world - len(missing)} of the {world} ranks started (no events from rank "
                                f"{', '.join(map(str, missing))}); {status}")
    for state in ranks:  # every rank ended well: each must have written its records
        if not wrote(state.rank):
            return PROGRAM_FAILED, f"{state.name}: {unwritten}"
    return OK, None


def _launched_ending(state: RankState, ending: LaunchEnding, restart: int) -> dict:
    """How one rank ended (`exit` None: it was stopped, or ended without a word), for status.json and
    the scenario record."""
    done = state.finished or state.failed
    if done is not None:
        return {"exit": _AGENT_EXIT_TO_CLI.get(done.exit, PROGRAM_FAILED),
                "reason": state.failed.reason if state.failed else None}
    if ending.kind in ("cancelled", "timeout", "failed", "restarted") and state not in ending.silent:
        why = {"cancelled": "cancelled", "timeout": "time limit reached",
               "restarted": f"the launcher restarted the group (restart {restart})"}.get(ending.kind)
        if why is None:
            why = f"{ending.culprit.name} failed" if ending.culprit is not None else "the run ended"
        return {"exit": None, "reason": f"stopped {state.where()}: {why}"}
    return {"exit": None, "reason": f"ended {state.where()} without saying why (killed by a signal, or out of memory?)"}


def _finish(run: workspace.RunFolder, status: str, code: int, reason: str | None,
            endings: dict[int | None, dict] | None = None) -> None:
    for partial in run.path.glob("*.partial"):
        partial.unlink(missing_ok=True)
    record: dict = {"status": status, "exit": code, "reason": reason}
    if endings:
        record["ranks"] = [{"rank": r, **e} for r, e in sorted(endings.items(), key=lambda kv: (kv[0] is None,
                                                                                               kv[0] or 0))]
    jsonio.write_json(run.file(protocol.STATUS), record, replace=False)
