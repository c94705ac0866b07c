"""The agent's main, in steps: read the spec → build the mode's runtime (`build_profile`,
`build_measure`) → run the program → classify how it ended (`classify_outcome`, a pure function) →
write the records.

Exit codes are protocol.EXIT_*; the events say what happened along the way. The user's traceback
is printed with the agent's own frames removed, so it points at the user's lines.

Under a launcher (the spec's `distributed`), the rank comes from the launcher's environment
(`protocol.placement`) and names every file this agent writes. An agent of a group the launcher
restarted after a failure runs nothing: it says so in its "started" event and exits 0, so that the
launcher ends instead of restarting again, and the first attempt's records stay as they are.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
import traceback
from dataclasses import dataclass, replace
from typing import Any, Callable

from . import protocol
from .protocol import AgentSpec, EventSink, FailedEvent, FinishedEvent, Schedule, StartedEvent, Target
from .timing import TimingRecorder, UnprofiledTail

AGENT_DIR = os.path.dirname(os.path.abspath(__file__))


# -- how the program ended, and what that means for the run -----------------------------------
@dataclass(frozen=True)
class ProgramEnding:
    """How the program stopped running: "window-complete" (stopped at the boundary after the
    window), "returned", "exited" (SystemExit with `status`), "raised" (`detail`: the exception and
    where, "RuntimeError at crash.py:9"), "loop-not-found" (`detail`: why), "bad-value" (`detail`:
    why `--value` could not be evaluated in the step's frame)."""

    kind: str
    status: Any = None
    detail: str | None = None
    message: str | None = None  # a raised exception's own message (failure.py)


@dataclass(frozen=True)
class Outcome:
    exit: int
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.exit == protocol.EXIT_OK


def classify_outcome(ending: ProgramEnding, *, window_complete: bool, steps_run: int, active_steps: int,
                     schedule: Schedule, target: Target, mode: str = "profile") -> Outcome:
    """The run's exit code and reason. `window_complete`: whether the window had been recorded
    when the program stopped; `steps_run` / `active_steps`: how many steps (active ones: timed
    passes in mode "measure") ran."""
    if ending.kind == "loop-not-found":
        return Outcome(protocol.EXIT_NO_STEP, ending.detail)
    if ending.kind == "bad-value":
        return Outcome(protocol.EXIT_USAGE, ending.detail)
    if window_complete:  # what the program did after its window is its own business
        return Outcome(protocol.EXIT_OK)
    if ending.kind == "exited" and ending.status not in (None, 0):
        return Outcome(protocol.EXIT_PROGRAM_FAILED,
                       f"the program exited with status {ending.status} before the window completed")
    if ending.kind == "raised":
        said = f": {ending.message}" if ending.message else ""
        return Outcome(protocol.EXIT_PROGRAM_FAILED,
                       f"the program raised {ending.detail} before the window completed{said}")
    if steps_run == 0:
        step = f"a call of {target.function}()" if target.function else f"the loop at line {target.line}"
        return Outcome(protocol.EXIT_NO_STEP, f"the program ended without reaching {step}")
    if active_steps == 0 and mode == "measure":
        return Outcome(protocol.EXIT_PROGRAM_FAILED,
                       f"the loop ran {steps_run} steps, fewer than the {schedule.warmup + 1} needed to reach the "
                       f"first timed pass (after {schedule.warmup} warm-up passes); give it more data or lower "
                       "--warmup")
    if active_steps == 0:
        s = schedule
        return Outcome(protocol.EXIT_PROGRAM_FAILED,
                       f"the loop ran {steps_run} steps, fewer than the {s.wait + s.warmup + 1} needed to reach the "
                       f"active window (wait {s.wait} + warmup {s.warmup} + active {s.active} = {s.cycle}); "
                       "give it more data or lower --wait/--warmup")
    return Outcome(protocol.EXIT_OK)  # the loop ended inside the window: the steps recorded are reported


def window_cut_short(ending: ProgramEnding, active_steps: int, schedule: Schedule) -> str:
    """The note of a profile whose program stopped inside the window: how, and how many of the
    active steps asked the figures are over."""
    how = (f"the program exited (status {ending.status if ending.status is not None else 0})" if ending.kind == "exited"
           else "the loop ended")
    asked = schedule.active * schedule.repeat
    return (f"{how} after {active_steps} of the {asked} active steps asked: the figures are over the "
            f"{active_steps} that ran; profile with more data, or fewer --active steps, for a whole window")


# -- reading the spec, the process -----------------------------------------------------------
def read_spec(path: str) -> AgentSpec:
    """The run's spec; ValueError (one line) when it cannot be read or breaks the contract."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise ValueError(f"cannot read the run's spec {path}: {e.strerror}") from None
    except ValueError as e:
        raise ValueError(f"the run's spec {path} is not JSON: {e}") from None
    return AgentSpec.from_json(doc)


def _own_process() -> int:
    """Which of a measure run's repeated processes this is (0: the first, or any other run)."""
    value = os.environ.pop(protocol.PROCESS_ENV, None)
    return int(value) if value else 0


# -- running the program ----------------------------------------------------------------------
def _print_user_traceback(exc: BaseException) -> None:
    tb = traceback.TracebackException.from_exception(exc)
    user = [f for f in tb.stack if not os.path.abspath(f.filename).startswith(AGENT_DIR)]
    tb.stack = traceback.StackSummary.from_list(user)
    sys.stderr.write("".join(tb.format()))
    sys.stderr.flush()


def run_program(spec: AgentSpec, files: Any, runtime: Any, *, window_complete: Callable[[], bool]) -> ProgramEnding:
    """Run the program as `python script` or `python -m module` would, with `runtime` as its
    `__stepscope__`; say how it stopped. A traceback of the program's own failure is printed here
    (before the window completed: after it, the failure is no part of the run)."""
    from .instrument import LoopNotFound
    from .program import run_module, run_script
    from .steps import WindowComplete
    from .timing import BadValueExpression

    try:
        if spec.entry.kind == "module":
            run_module(spec.entry.name, list(spec.argv), files, runtime)
        else:
            run_script(spec.entry.path, list(spec.argv), files, runtime)
    except WindowComplete:
        return ProgramEnding("window-complete")
    except LoopNotFound as e:
        return ProgramEnding("loop-not-found", detail=str(e))
    except BadValueExpression as e:
        return ProgramEnding("bad-value", detail=str(e))
    except SystemExit as e:
        return ProgramEnding("exited", status=e.code)
    except BaseException as e:  # the user's program raised: show its own traceback
        if not window_complete():
            _print_user_traceback(e)
        from . import failure

        return ProgramEnding("raised", detail=failure.where(e, spec.root, AGENT_DIR), message=failure.message(e))
    return ProgramEnding("returned")


# -- the records ------------------------------------------------------------------------------
def _write_json(path: str, obj: Any) -> None:
    tmp = f"{path}.{os.getpid()}.partial"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, default=str)
    os.replace(tmp, path)


def rank_record(spec: AgentSpec, place: protocol.Placement, observed: dict[str, Any]) -> dict[str, Any]:
    """What this rank was in the distributed run, and whether the program formed a process group."""
    record = protocol.to_json(spec.distributed) if spec.distributed is not None else {}
    record.update(rank=place.rank, local_rank=place.local_rank, node=place.node, started_by=place.launcher,
                  omp_num_threads=os.environ.get("OMP_NUM_THREADS"))
    if place.world_size is not None:  # the launcher's word for it over the capture side's
        record["world_size"] = place.world_size
    group = observed.get("process_group")
    record["process_group"] = group
    if group is None and "models" in observed:  # the window began without one
        record["note"] = ("no torch.distributed process group was initialised when the window began: "
                          "this rank ran the step on its own")
    return record


def scenario_record(spec: AgentSpec, *, machine: dict[str, Any], clock: Any, activities: list[str],
                    traces: list[str], program_state: dict[str, Any], torch_compile: dict[str, Any],
                    place: protocol.Placement | None) -> dict[str, Any]:
    """The scenario record (scenario.json): the capture side's part from the spec, then what this
    agent saw. `clock`: the run's steps.StepClock."""
    observed = clock.observed
    record = dict(spec.scenario)
    record.update({
        "machine": machine,
        "schedule": protocol.to_json(clock.schedule),
        "startup": clock.startup(),
        "steps_run": clock.steps_run(),
        "active_steps_recorded": clock.active_steps_seen(),
        "window_complete": clock.window_complete,
        "activities": activities,
        "program_state": program_state | {"torch_compile_used": torch_compile["compiled_step"]},
        "torch_compile": torch_compile,
        "traces": traces,
        "observed": observed,
        "notes": clock.notes,
    })
    batch = (observed.get("batch") or {}).get("batch_size")
    if batch is None:
        batch = (observed.get("data_source") or {}).get("batch_size")
    record["batch_size"] = batch
    if place is not None:
        record["distributed"] = rank_record(spec, place, observed)
    return record


# -- the mode's runtime ----------------------------------------------------------------------
class Refused(Exception):
    """The run cannot be made here (agent exit EXIT_REFUSED); the message is one line."""


@dataclass
class ModeRuntime:
    """What a mode runs the program with: the step clock, its recorder, and the files the
    program's rewrite reports into (a mode that records no regions rewrites without them)."""

    clock: Any  # steps.StepClock
    recorder: Any  # a steps.Recorder
    files: Any  # program.ProgramFiles
    activities: list[str]  # what the recorder collects, for the scenario record
    timings: Any = None  # what writes the timings record (timing.TimingRecorder / UnprofiledTail)
    seeds: dict[str, Any] | None = None  # what was seeded before the program started (mode "measure")
    unit: Any = None  # a step function's optimizer_steps.StepUnit: which of its calls begin a step


def step_unit(target: Target) -> Any:
    """A step function's StepUnit, its torch hooks installed (None for a loop)."""
    if target.function is None:
        return None
    from .optimizer_steps import StepUnit

    unit = StepUnit(micro_batch=target.micro_batch)
    unit.install()
    return unit


def build_profile(spec: AgentSpec, machine: dict[str, Any], rank: int | None, events: EventSink,
                  process_start: float) -> ModeRuntime:
    """Mode "profile": the clock with torch.profiler as its recorder. Refused on a GPU machine whose
    torch.profiler cannot collect GPU activity (unless the options say CPU only)."""
    from torch.profiler import ProfilerActivity

    from .profiling import ProfilerSession
    from .program import ProgramFiles
    from .steps import StepClock

    options = spec.profile
    assert options is not None  # AgentSpec checks it
    activities = [ProfilerActivity.CPU]
    if machine["accelerator"] in ("cuda", "rocm") and not options.cpu_only:
        if not machine["gpu_collection"]:
            raise Refused("this is a GPU machine but torch.profiler cannot collect GPU activity here "
                          "(CUDA activity unsupported); rerun with --cpu-only for a CPU-only trace")
        activities.append(ProfilerActivity.CUDA)
    session = ProfilerSession(run_dir=spec.run_dir, rank=rank, options=options, activities=activities)
    sched = options.schedule
    # After the window, the same steps without the profiler: as many warm-up steps as preceded the
    # window, then as many timed ones as it had active (the profiler's distortion, analysis/distortion.py).
    tail = UnprofiledTail(warmup=sched.wait + sched.warmup, passes=sched.active)
    files, unit = ProgramFiles(spec.root, spec.target), step_unit(spec.target)
    clock = StepClock(schedule=sched, recorder=session, emit=events.send, process_start=process_start,
                      run_to_end=options.run_to_end, after_window=tail, unit=unit, in_workspace=files.in_workspace)
    return ModeRuntime(clock, session, files, [str(a).split(".")[-1] for a in activities], timings=tail, unit=unit)


def build_measure(spec: AgentSpec, machine: dict[str, Any], rank: int | None, events: EventSink,
                  process_start: float) -> ModeRuntime:
    """Mode "measure": the clock with a timer as its recorder, a rewrite with the step boundaries
    only, and the seeds set (`seed_everything`). No profiler is imported."""
    from .program import ProgramFiles
    from .steps import StepClock

    options = spec.measure
    assert options is not None  # AgentSpec checks it
    recorder = TimingRecorder(warmup=options.warmup, passes=options.passes, value=options.value,
                              function_step=spec.target.function is not None)
    files, unit = ProgramFiles(spec.root, spec.target, regions=False), step_unit(spec.target)
    clock = StepClock(schedule=options.schedule, recorder=recorder, emit=events.send, process_start=process_start,
                      unit=unit, in_workspace=files.in_workspace)
    return ModeRuntime(clock, recorder, files, [], timings=recorder, seeds=seed_everything(options.seed), unit=unit)


def seed_everything(seed: int) -> dict[str, Any]:
    """Seed what a training step draws from before the program starts, and say what was seeded:
    Python's `random`, torch (the CPU and every CUDA device), and numpy's global generator when
    numpy is loaded. PYTHONHASHSEED is the capture side's (it must be set before Python starts)."""
    import random

    import torch

    random.seed(seed)
    torch.manual_seed(seed)
    seeded = {"seed": seed, "python_random": True, "torch": True, "numpy": False,
              "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED")}
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        try:
            numpy.random.seed(seed)
            seeded["numpy"] = True
        except Exception:  # an unusual numpy: leave it unseeded, and say so
            pass
    return seeded


# -- main -------------------------------------------------------------------------------------
def _refuse(events: EventSink, reason: str, code: int) -> int:
    events.send(FailedEvent(reason=reason, exit=code, at=time.time()))
    return code


def main(spec_path: str, process_start: float, launcher_args: tuple[str, ...] = ()) -> int:
    """Run the spec's program; `launcher_args` (a launcher's `--local-rank=N`) come before its
    arguments, as the launcher puts them."""
    os.environ[protocol.RUN_ENV] = "1"
    events: EventSink = protocol.NullSink()
    try:
        try:
            spec = read_spec(spec_path)
            if launcher_args:
                spec = replace(spec, argv=(*launcher_args, *spec.argv))
            place = protocol.placement(os.environ) if spec.distributed is not None else None
            process = _own_process()
        except ValueError as e:  # the spec or the launcher's variables: no rank to name the events by
            events = protocol.open_event_sink()
            sys.stderr.write(f"stepscope: {e}\n")
            return _refuse(events, str(e), protocol.EXIT_AGENT_ERROR)
        events = protocol.open_event_sink(run_dir=spec.run_dir if spec.distributed is not None else None,
                                          rank=place.rank if place is not None else None, cycle=process)
        return _main(spec, place, process, process_start, events)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        events.close()


def _started(place: protocol.Placement | None) -> StartedEvent:
    if place is None:
        return StartedEvent(pid=os.getpid(), host=platform.node())
    return StartedEvent(pid=os.getpid(), host=platform.node(), rank=place.rank, world_size=place.world_size,
                        node=place.node, restart=place.restart)


def _main(spec: AgentSpec, place: protocol.Placement | None, process: int, process_start: float,
          events: EventSink) -> int:
    rank = place.rank if place is not None else None
    if place is not None and place.restart:
        events.send(_started(place))
        sys.stderr.write(f"stepscope: {place.launcher} restarted the group (restart {place.restart}) after a process "
                         f"ended; Stepscope records the first attempt only, so rank {rank} runs nothing now and "
                         "exits, and what the first attempt recorded is kept\n")
        return protocol.EXIT_OK
    try:
        import torch  # noqa: F401  (the user's interpreter must have it)
    except ImportError as e:
        sys.stderr.write(f"stepscope: torch cannot be imported in {sys.executable}: {e}\n")
        return _refuse(events, f"torch cannot be imported in {sys.executable}: {e}", protocol.EXIT_REFUSED)

    from . import compiled, guard
    from . import scenario as scenario_mod

    machine = scenario_mod.machine_record()
    try:
        build = build_measure if spec.mode == "measure" else build_profile
        mode = build(spec, machine, rank, events, process_start)
    except Refused as e:
        return _refuse(events, str(e), protocol.EXIT_REFUSED)
    if place is not None:
        machine.update(rank=rank, world_size=place.world_size, node=place.node)
    clock = mode.clock
    events.send(_started(place))
    guard.install(clock.note)
    compile_records = None
    if spec.profile is not None and spec.profile.compile_records:
        from . import compile_log

        compile_enabled = compile_log.enable()
        compile_records = compile_log.install(clock.where)

    try:
        ending = run_program(spec, mode.files, clock.runtime(), window_complete=lambda: clock.window_complete)
    finally:
        if compile_records is not None:
            compile_log.uninstall(compile_records)
    window_complete = clock.window_complete
    if not window_complete:
        clock.finish()
    for note in mode.files.notes:
        clock.note("instrument", note)
    if mode.unit is not None:
        mode.unit.uninstall()
        clock.observed["step_unit"] = mode.unit.record(clock.schedule.phase)
        if mode.unit.note:
            clock.note("step", mode.unit.note)
    outcome = classify_outcome(ending, window_complete=window_complete, steps_run=clock.steps_run(),
                               active_steps=clock.active_steps_seen(), schedule=clock.schedule, target=spec.target,
                               mode=spec.mode)
    if spec.mode == "profile" and outcome.ok and not window_complete:
        clock.note("window", window_cut_short(ending, clock.active_steps_seen(), clock.schedule))
    if ending.kind in ("loop-not-found", "bad-value"):  # no record worth writing
        if ending.kind == "bad-value":
            sys.stderr.write(f"stepscope: {outcome.reason}\n")
        return _refuse(events, outcome.reason or "", outcome.exit)
    timings = mode.timings.record() if mode.timings is not None else None
    if isinstance(mode.timings, UnprofiledTail) and mode.timings.note():
        clock.note("unprofiled", mode.timings.note())
    ahead = (clock.observed.get("data_source") or {}).get("prepared_ahead")
    if spec.mode == "measure" and isinstance(ahead, int) and ahead > 0 and ahead >= spec.measure.warmup:
        clock.note("warmup", f"the loop's DataLoader workers keep {ahead} batches ready and the warm-up is "
                             f"{spec.measure.warmup} passes: after a pause (start-up, the first steps' one-off costs) the "
                             f"first measured passes can find their batch ready and read faster than the loop's pace; "
                             f"use --warmup {ahead + 1} or more")
    if spec.mode == "measure" and timings is not None and len(timings["raw_ms"]) < spec.measure.passes:
        clock.note("passes", f"the loop ended after {len(timings['raw_ms'])} of the {spec.measure.passes} passes "
                             "asked: the figures are over those")

    traces = mode.recorder.outputs()
    torch_compile = compiled.record(clock.observed, clock.dynamo_at_window_start, clock.dynamo_at_window_end, traces)
    record = scenario_record(
        spec, machine=machine | {"devices": scenario_mod.cuda_device_names()}, clock=clock,
        activities=mode.activities, traces=traces, program_state=scenario_mod.program_state(),
        torch_compile=torch_compile, place=place)
    if mode.seeds is not None:
        record["seeds"] = mode.seeds
    _write_json(os.path.join(spec.run_dir, protocol.run_file_name(protocol.SCENARIO, rank, process)), record)
    _write_json(os.path.join(spec.run_dir, protocol.run_file_name(protocol.FILES, rank, process)), mode.files.table())
    if timings is not None:
        _write_json(os.path.join(spec.run_dir, protocol.run_file_name(protocol.TIMINGS, rank, process)), timings)
    compiled_doc = compile_records.record(compile_enabled) if compile_records is not None else None
    if compiled_doc is not None:
        _write_json(os.path.join(spec.run_dir, protocol.run_file_name(protocol.COMPILE, rank, process)), compiled_doc)
    if not outcome.ok:
        events.send(FailedEvent(reason=outcome.reason or "", exit=outcome.exit, at=time.time()))
    events.send(FinishedEvent(exit=outcome.exit, traces=tuple(traces)))
    return outcome.exit
