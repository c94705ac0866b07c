"""The agent's main: read the spec, set up the window, run the program, report how it ended.

Exit codes are protocol.EXIT_*; the events pipe says what happened along the way. The user's
traceback is printed with the agent's own frames removed, so it points at the user's lines.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any

from . import protocol

AGENT_DIR = os.path.dirname(os.path.abspath(__file__))


class Events:
    """JSON lines on the pipe inherited from the capture side (silently absent when run by hand)."""

    def __init__(self) -> None:
        fd = os.environ.pop(protocol.EVENTS_FD_ENV, None)  # the program's children don't inherit it
        self._out = os.fdopen(int(fd), "w", buffering=1, encoding="utf-8") if fd else None

    def __call__(self, event: str, **fields: Any) -> None:
        if self._out is None:
            return
        try:
            self._out.write(json.dumps({"event": event, **fields}) + "\n")
        except (OSError, ValueError):
            self._out = None  # the capture side went away; the program keeps running


def _print_user_traceback(exc: BaseException) -> None:
    tb = traceback.TracebackException.from_exception(exc)
    stack = tb.stack
    user = [f for f in stack if not os.path.abspath(f.filename).startswith(AGENT_DIR)]
    tb.stack = traceback.StackSummary.from_list(user)
    sys.stderr.write("".join(tb.format()))
    sys.stderr.flush()


def _write_json(path: str, obj: Any) -> None:
    tmp = f"{path}.{os.getpid()}.partial"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, default=str)
    os.replace(tmp, path)


def _own_rank() -> int | None:
    """This agent's rank in a distributed capture, else None. Taken out of the environment so that
    the program's own child processes do not inherit it."""
    value = os.environ.pop(protocol.RANK_ENV, None)
    return int(value) if value else None


def _rank_record(spec: dict[str, Any], rank: int, local_rank: str | None,
                 observed: dict[str, Any]) -> dict[str, Any]:
    """What this rank was in the distributed run, and whether the program formed a process group."""
    record = dict(spec.get("distributed") or {})
    record.update(rank=rank, local_rank=int(local_rank) if local_rank else None)
    group = observed.get("process_group")
    record["process_group"] = group
    if group is None and "models" in observed:  # the window began without one
        record["note"] = ("no torch.distributed process group was initialised when the window began: "
                          "this rank ran the step on its own")
    return record


def main(spec_path: str, process_start: float) -> int:
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    emit = Events()
    os.environ[protocol.RUN_ENV] = "1"

    try:
        import torch  # noqa: F401  (the user's interpreter must have it)
        from torch.profiler import ProfilerActivity
    except ImportError as e:
        emit("failed", reason=f"torch cannot be imported in {sys.executable}: {e}", exit=protocol.EXIT_REFUSED)
        sys.stderr.write(f"stepscope: torch cannot be imported in {sys.executable}: {e}\n")
        return protocol.EXIT_REFUSED

    from . import scenario as scenario_mod
    from .instrument import LoopNotFound
    from .program import Workspace, run_module, run_script
    from .window import StepWindow, WindowComplete

    opts = spec["options"]
    machine = scenario_mod.machine_record()
    activities = [ProfilerActivity.CPU]
    if machine["accelerator"] in ("cuda", "rocm") and not opts.get("cpu_only"):
        if not machine["gpu_collection"]:
            reason = ("this is a GPU machine but torch.profiler cannot collect GPU activity here "
                      "(CUDA activity unsupported); rerun with --cpu-only for a CPU-only trace")
            emit("failed", reason=reason, exit=protocol.EXIT_REFUSED)
            return protocol.EXIT_REFUSED
        activities.append(ProfilerActivity.CUDA)

    run_dir = spec["run_dir"]
    sched = spec["schedule"]
    rank = _own_rank()
    local_rank = os.environ.get("LOCAL_RANK")  # read before the program can change it
    if rank is not None:
        machine.update(rank=rank, world_size=(spec.get("distributed") or {}).get("world_size"))
    window = StepWindow(
        trace_path=os.path.join(run_dir, protocol.rank_file_name("trace.json", rank)),
        wait=sched["wait"], warmup=sched["warmup"], active=sched["active"], repeat=sched["repeat"],
        activities=activities,
        record_shapes=bool(opts.get("shapes")), with_stack=bool(opts.get("stack")),
        profile_memory=bool(opts.get("memory")), run_to_end=bool(opts.get("run_to_end")),
        max_depth=int(opts.get("depth", 2)), line_regions=bool(opts.get("line_regions", True)),
        bound_regions=bool(opts.get("bound_regions", True)),
        emit=emit, process_start=process_start,
    )
    emit("started", pid=os.getpid(), rank=rank)
    from . import guard

    guard.install(window.note)

    outcome: dict[str, Any] = {"exit": protocol.EXIT_OK, "reason": None}
    entry, target, argv = spec["entry"], spec["target"], spec.get("argv", [])
    ws = Workspace(spec["root"], target)
    try:
        if entry["kind"] == "module":
            run_module(entry["name"], argv, ws, window)
        else:
            run_script(entry["path"], argv, ws, window)
    except WindowComplete:
        pass
    except LoopNotFound as e:
        emit("failed", reason=str(e), exit=protocol.EXIT_NO_STEP)
        return protocol.EXIT_NO_STEP
    except SystemExit as e:
        if not window.window_complete and e.code not in (None, 0):
            outcome = {"exit": protocol.EXIT_PROGRAM_FAILED,
                       "reason": f"the program exited with status {e.code} before the window completed"}
    except BaseException as e:  # the user's program raised: show its own traceback
        if not window.window_complete:
            _print_user_traceback(e)
            where = traceback.extract_tb(e.__traceback__)
            user = [f for f in where if not os.path.abspath(f.filename).startswith(AGENT_DIR)]
            at = f" at {os.path.basename(user[-1].filename)}:{user[-1].lineno}" if user else ""
            outcome = {"exit": protocol.EXIT_PROGRAM_FAILED,
                       "reason": f"the program raised {type(e).__name__}{at} before the window completed"}

    if not window.window_complete:
        window.finish_early()
        if outcome["exit"] == protocol.EXIT_OK:
            if window.steps_run() == 0:
                step = f"the loop at line {target['line']}" if target.get("line") else f"a call of {target.get('function')}()"
                outcome = {"exit": protocol.EXIT_NO_STEP,
                           "reason": f"the program ended without reaching {step}"}
            elif window.active_steps_seen() == 0:
                need = sched["wait"] + sched["warmup"] + sched["active"]
                outcome = {"exit": protocol.EXIT_PROGRAM_FAILED,
                           "reason": (f"the loop ran {window.steps_run()} steps, fewer than the "
                                      f"{sched['wait'] + sched['warmup'] + 1} needed to reach the active window "
                                      f"(wait {sched['wait']} + warmup {sched['warmup']} + active {sched['active']} = {need}); "
                                      "give it more data or lower --wait/--warmup")}

    from . import compiled

    torch_compile = compiled.record(window.observed, window.dynamo_at_window_start,
                                    window.dynamo_at_window_end, window.traces_written)
    record = dict(spec.get("scenario", {}))
    record.update({
        "machine": machine | {"devices": scenario_mod.cuda_device_names()},
        "schedule": sched,
        "startup": window.startup(),
        "steps_run": window.steps_run(),
        "active_steps_recorded": window.active_steps_seen(),
        "window_complete": window.window_complete,
        "activities": [str(a).split(".")[-1] for a in activities],
        "program_state": scenario_mod.program_state() | {"torch_compile_used": torch_compile["compiled_step"]},
        "torch_compile": torch_compile,
        "traces": window.traces_written,
        "observed": window.observed,
        "notes": window.notes,
    })
    batch = (window.observed.get("batch") or {}).get("batch_size")
    if batch is None:
        batch = (window.observed.get("data_source") or {}).get("batch_size")
    record["batch_size"] = batch
    if rank is not None:
        record["distributed"] = _rank_record(spec, rank, local_rank, window.observed)
    _write_json(os.path.join(run_dir, protocol.rank_file_name("scenario.json", rank)), record)
    _write_json(os.path.join(run_dir, protocol.rank_file_name("files.json", rank)), ws.table())
    if outcome["exit"] != protocol.EXIT_OK:
        emit("failed", **outcome)
    emit("finished", exit=outcome["exit"], traces=window.traces_written)
    sys.stdout.flush()
    sys.stderr.flush()
    return outcome["exit"]
