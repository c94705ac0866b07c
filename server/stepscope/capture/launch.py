"""Start a capture's agent processes — one, or one per rank as torchrun would — watch them, stop them.

A distributed capture (`--nproc N`, N > 1) starts N agents of the user's interpreter at once, each
with the environment torchrun gives a worker on one node: RANK = LOCAL_RANK = r, WORLD_SIZE =
LOCAL_WORLD_SIZE = N, GROUP_RANK 0, MASTER_ADDR 127.0.0.1 and one free MASTER_PORT, so that
`dist.init_process_group()` with its default env:// rendezvous forms the group; and, as torchrun
does, OMP_NUM_THREADS=1 unless the environment sets it. protocol.RANK_ENV tells the agent its rank
so that it names its files by rank.

Invariants:
- Every rank reads the same spec.json: the same step, schedule and options, so the windows line up.
- Each rank has its own events pipe and its own log (program-rank<r>.log); its output reaches the
  caller's sink with every line prefixed `[rank r] `.
- `watch` ends on the first of: every process exited; a process failed (the other ranks would wait
  for it in their next collective, so they are stopped rather than waited for); the time limit; a
  cancel. `stop_all` then stops every process group, whatever the ending, and returns only when
  every agent is reaped.
- Exit codes and messages are runner.py's business; this module only says how the watch ended.
"""

from __future__ import annotations

import signal
import socket
import threading
import time
from dataclasses import dataclass
from typing import Callable, TextIO

from .. import workspace
from ..agent import protocol
from .agents import AgentProcess

MASTER_ADDR = "127.0.0.1"
KILL_GRACE_S = 3.0
POLL_S = 0.05
EVENTS_DRAIN_S = 1.0


def free_port(host: str = MASTER_ADDR) -> int:
    """A TCP port free on `host` right now (the OS picks it). As with torchrun's own choice, another
    process could take it before rank 0 binds it; that shows as a rendezvous error of the program."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def distributed_environment(base: dict[str, str], world_size: int, port: int) -> dict[str, str]:
    """What every rank shares: the rendezvous, the world, and torchrun's thread default."""
    env = {
        "WORLD_SIZE": str(world_size), "LOCAL_WORLD_SIZE": str(world_size),
        "GROUP_RANK": "0", "GROUP_WORLD_SIZE": "1", "ROLE_NAME": "default", "ROLE_WORLD_SIZE": str(world_size),
        "MASTER_ADDR": MASTER_ADDR, "MASTER_PORT": str(port), "OMP_NUM_THREADS": omp_num_threads(base),
    }
    return env


def omp_num_threads(base: dict[str, str]) -> str:
    """Every rank's OMP_NUM_THREADS: the environment's, else 1, torchrun's default with several
    workers on one node (so that N ranks do not each take every core)."""
    return base.get("OMP_NUM_THREADS", "1")


def rank_environment(rank: int) -> dict[str, str]:
    return {"RANK": str(rank), "LOCAL_RANK": str(rank), "ROLE_RANK": str(rank), protocol.RANK_ENV: str(rank)}


def _serialised(on_event: Callable[[protocol.Event], None] | None) -> Callable[[protocol.Event], None] | None:
    """The caller's callback, called by one events thread at a time (there is one per rank)."""
    if on_event is None:
        return None
    lock = threading.Lock()

    def call(event: protocol.Event) -> None:
        with lock:
            on_event(event)

    return call


def start_agents(cmd: list[str], *, run: workspace.RunFolder, cwd: str, env: dict[str, str], nproc: int,
                 output: TextIO | None, on_event: Callable[[protocol.Event], None] | None) -> list[AgentProcess]:
    """Start one agent (nproc 1: the environment as given, program.log) or one per rank.
    Raises OSError when the interpreter cannot start; ranks already started are stopped first."""
    if nproc == 1:
        return [AgentProcess.start(cmd, cwd=cwd, env=env, log_path=run.file(protocol.PROGRAM_LOG),
                                   sink=output, on_event=on_event)]
    shared = {**env, **distributed_environment(env, nproc, free_port())}
    sink_lock = threading.Lock()
    on_event = _serialised(on_event)
    agents: list[AgentProcess] = []
    try:
        for rank in range(nproc):
            agents.append(AgentProcess.start(
                cmd, cwd=cwd, env={**shared, **rank_environment(rank)}, rank=rank,
                log_path=run.file(protocol.run_file_name(protocol.PROGRAM_LOG, rank)),
                sink=output, prefix=f"[rank {rank}] ", sink_lock=sink_lock, on_event=on_event))
    except OSError:
        stop_all(agents)
        raise
    return agents


@dataclass(frozen=True)
class Ending:
    """How the watch ended: "exited" (every process ended by itself), "failed" (`culprit` failed
    first), "timeout" or "cancelled"; `running`: the agents still running then (to be stopped)."""

    kind: str
    culprit: AgentProcess | None = None
    running: tuple[AgentProcess, ...] = ()


def _first_failure(agents: list[AgentProcess]) -> AgentProcess | None:
    failed = [a for a in agents if a.failed_at is not None]
    return min(failed, key=lambda a: a.failed_at) if failed else None


def _running(agents: list[AgentProcess]) -> tuple[AgentProcess, ...]:
    return tuple(a for a in agents if a.poll() is None)


def watch(agents: list[AgentProcess], *, cancel: threading.Event | None, deadline: float | None) -> Ending:
    """Wait for the agents to end; see the module's invariants for what ends the watch."""
    while True:
        codes = [a.poll() for a in agents]
        if any(code not in (None, protocol.EXIT_OK) for code in codes) or all(c is not None for c in codes):
            if len(agents) > 1:  # which rank failed first may hang on events still in the pipes
                for agent, code in zip(agents, codes):
                    if code is not None:
                        agent.drain_events(EVENTS_DRAIN_S)
            culprit = _first_failure(agents)
            return Ending("failed" if culprit is not None else "exited", culprit, _running(agents))
        if cancel is not None and cancel.is_set():
            return Ending("cancelled", None, _running(agents))
        if deadline is not None and time.monotonic() > deadline:
            return Ending("timeout", None, _running(agents))
        time.sleep(POLL_S)


def stop_all(agents: list[AgentProcess]) -> None:
    """Stop every agent's process group (also the workers a finished program left behind): SIGTERM
    to all at once, SIGKILL to what is left after the grace period; then reap them all."""
    for agent in agents:
        agent.signal_group(signal.SIGTERM)
    deadline = time.monotonic() + KILL_GRACE_S
    while any(a.poll() is None for a in agents) and time.monotonic() < deadline:
        time.sleep(POLL_S)
    for agent in agents:
        agent.signal_group(signal.SIGKILL)
    for agent in agents:
        agent.finish()
