"""Start a capture's own agent process (no launcher), watch it, stop it.

A run started by a launcher (`--launcher`, `--nproc N`) is launchers/external.py's; this module
starts the one agent of a plain run, with its events pipe and its log (program.log).

Invariants:
- `watch` ends on the first of: every process exited; a process failed; the time limit; a cancel.
  `stop_all` then stops every process group, whatever the ending, and returns only when every agent
  is reaped.
- Exit codes and messages are runner.py's business; this module only says how the watch ended.
"""

from __future__ import annotations

import signal
import threading
import time
from dataclasses import dataclass
from typing import Callable, TextIO

from .. import workspace
from ..agent import protocol
from .agents import AgentProcess

KILL_GRACE_S = 3.0
POLL_S = 0.05


def start_agent(cmd: list[str], *, run: workspace.RunFolder, cwd: str, env: dict[str, str],
                output: TextIO | None, on_event: Callable[[protocol.Event], None] | None) -> AgentProcess:
    """Start the agent (the environment as given, its output to program.log). Raises OSError when the
    interpreter cannot start."""
    return AgentProcess.start(cmd, cwd=cwd, env=env, log_path=run.file(protocol.PROGRAM_LOG), sink=output,
                              on_event=on_event)


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
