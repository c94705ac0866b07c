"""A launched run: the launcher's process, its output copied, each rank's state read from the
events files, watched to its end and stopped as a whole.

Invariants:
- The launcher leads a session of its own, so stopping its process group stops the launcher and
  what it runs in its group (srun passes the signal on to its tasks; torchrun stops its workers,
  each of which leads a session of its own). A rank on this machine that outlives the launcher
  (torchrun killed before it had stopped its workers) is stopped by the pid of its "started" event,
  and only while that process still runs this run's agent.
- The launcher's stdout and stderr are copied line by line to program.log and to the caller's sink,
  never parsed for results: what each rank did comes from its events file. The last TAIL_LINES
  lines are kept, so that a launcher that ends before any rank started can be said to have ended
  for the reason its output gives (`last_error_line`).
- A measure run's process k reads only the events files of process k (EventFiles).
- Ranks are known from their events files, not up front. A rank's state is its first attempt's; a
  later "started" event with a restart count only marks the group as restarted by the launcher.
- `watch` ends on the first of: a rank failed (the others would wait for it in their next
  collective, so the run ends rather than waits); the launcher restarted the group; the launcher
  exited; the time limit; a cancel. The rank that failed first is the one whose "failed" event is
  the earliest by its host's clock. A rank that ended without a word (killed by a signal, out of
  memory) sends no event: such ranks on this machine are named in the ending (`silent`), seen gone
  at the moment the watch ends; which came first, their end or the others' failures, is not known.
"""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TextIO

from ...agent import protocol
from ...agent.protocol import Event, FailedEvent, FinishedEvent, StartedEvent, StepEvent
from ..agents import copy_lines
from .events import EventFiles

POLL_S = 0.1
KILL_GRACE_S = 5.0  # torchrun stops its workers on SIGTERM; this long, then SIGKILL
SETTLE_S = 0.5  # after a first failure, the others' failures (they often follow) are read too
TAIL_LINES = 200  # the launcher's last lines of output, kept for the reason it failed


@dataclass
class RankState:
    """What one rank's events say (its first attempt)."""

    rank: int | None
    started: StartedEvent | None = None
    last_step: StepEvent | None = None
    failed: FailedEvent | None = None
    finished: FinishedEvent | None = None
    restart: int = 0  # the highest restart count a later attempt of this rank reported
    events: list[Event] = field(default_factory=list)

    def add(self, event: Event) -> None:
        if isinstance(event, StartedEvent) and event.restart:
            self.restart = max(self.restart, event.restart)
            return
        if self.restart:  # a restarted attempt's agent sends nothing else; be safe all the same
            return
        self.events.append(event)
        if isinstance(event, StartedEvent):
            self.started = self.started or event
        elif isinstance(event, StepEvent):
            self.last_step = event
        elif isinstance(event, FailedEvent):
            self.failed = self.failed or event
        elif isinstance(event, FinishedEvent):
            self.finished = event

    @property
    def name(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else "the program"

    @property
    def running(self) -> bool:
        """Started and not yet finished (as far as its events say)."""
        return self.started is not None and self.finished is None and self.failed is None

    def where(self) -> str:
        if self.last_step is None:
            return "before its first step"
        return f"in step {self.last_step.index + 1} ({self.last_step.phase})"


@dataclass(frozen=True)
class Ending:
    """How the watch ended: "exited" (the launcher, with `launcher_exit`), "failed" (`culprit` failed
    first), "restarted" (the launcher restarted the group), "timeout" or "cancelled". `silent`: the
    ranks on this machine that had ended without a word by then."""

    kind: str
    culprit: RankState | None = None
    launcher_exit: int | None = None
    silent: tuple[RankState, ...] = ()


class LaunchedRun:
    """A started launcher. Create with `LaunchedRun.start`; end with `stop` (always)."""

    def __init__(self, proc: subprocess.Popen, log: TextIO, run_dir: Path, agent_dir: Path,
                 threads: list[threading.Thread], tail: deque, lock: threading.Lock, process: int = 0) -> None:
        self.proc = proc
        self.ranks: dict[int | None, RankState] = {}
        self._log = log
        self._agent_dir = agent_dir
        self._events = EventFiles(run_dir, process)
        self._threads = threads
        self._tail = tail
        self._lock = lock

    @classmethod
    def start(cls, cmd: list[str], *, cwd: str, env: dict[str, str], run_dir: Path, agent_dir: Path,
              log_path: Path, sink: TextIO | None, process: int = 0) -> "LaunchedRun":
        """Start the launcher (`process`: which process of a measure run it starts). Raises OSError
        when it cannot start (no such command)."""
        env = {k: v for k, v in env.items() if k != protocol.EVENTS_FD_ENV}  # the ranks write files
        log = open(log_path, "w", encoding="utf-8", errors="replace")
        try:
            proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, encoding="utf-8", errors="replace",
                                    start_new_session=True)
        except OSError:
            log.close()
            raise
        lock = threading.Lock()
        tail: deque = deque(maxlen=TAIL_LINES)
        threads = [threading.Thread(target=copy_lines, args=(stream, log, sink, "", lock, tail), daemon=True)
                   for stream in (proc.stdout, proc.stderr)]
        for t in threads:
            t.start()
        return cls(proc, log, Path(run_dir), Path(agent_dir), threads, tail, lock, process)

    def last_lines(self) -> list[str]:
        """The launcher's last lines of output (TAIL_LINES at most), in the order they were read."""
        with self._lock:
            return list(self._tail)

    # -- state --------------------------------------------------------------------------------
    def update(self, on_event: Callable[[Event], None] | None = None) -> None:
        """Read the events written since the last update."""
        for rank, event in self._events.poll():
            state = self.ranks.setdefault(rank, RankState(rank))
            state.add(event)
            if on_event is not None:
                on_event(event)

    def in_order(self) -> list[RankState]:
        return [self.ranks[r] for r in sorted(self.ranks, key=lambda r: (r is None, r or 0))]

    def world_size(self) -> int | None:
        """The world size the launcher gave the ranks (the largest any rank reported)."""
        sizes = [s.started.world_size for s in self.ranks.values() if s.started and s.started.world_size]
        return max(sizes) if sizes else None

    def restarted(self) -> int:
        return max((s.restart for s in self.ranks.values()), default=0)

    def _first_failure(self) -> RankState | None:
        failed = [s for s in self.ranks.values() if s.failed is not None]
        return min(failed, key=lambda s: (s.failed.at, s.rank or 0)) if failed else None

    # -- watching -----------------------------------------------------------------------------
    def watch(self, *, cancel: threading.Event | None, deadline: float | None,
              on_event: Callable[[Event], None] | None = None) -> Ending:
        """Wait for the run to end; see the module's invariants for what ends the watch."""
        while True:
            code = self.proc.poll()
            self.update(on_event)  # after the poll: what the ranks wrote before the launcher ended is in
            if self._first_failure() is not None:
                silent = self._silent()  # before the launcher stops the others in turn
                if code is None:
                    time.sleep(SETTLE_S)
                    self.update(on_event)
                return Ending("failed", self._first_failure(), code, silent)
            if self.restarted():
                return Ending("restarted", None, code, self._silent())
            if code is not None:
                return Ending("exited", None, code)
            if cancel is not None and cancel.is_set():
                return Ending("cancelled")
            if deadline is not None and time.monotonic() > deadline:
                return Ending("timeout")
            time.sleep(POLL_S)

    # -- ending -------------------------------------------------------------------------------
    def _signal_group(self, sig: signal.Signals) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _runs_this_agent(self, pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                return str(self._agent_dir).encode() in f.read()
        except OSError:
            return False

    def _silent(self) -> tuple[RankState, ...]:
        """The ranks on this machine that started, said neither that they failed nor that they
        finished, and whose process no longer runs."""
        here = platform.node()
        return tuple(s for s in self.in_order() if s.running and s.started.host == here
                     and not self._runs_this_agent(s.started.pid))

    def _stop_local_ranks(self) -> None:
        """SIGKILL what is left of this machine's ranks (and their own process groups)."""
        here = platform.node()
        for state in self.ranks.values():
            started = state.started
            if started is None or started.host != here or not self._runs_this_agent(started.pid):
                continue
            try:
                leads = os.getpgid(started.pid) == started.pid
                os.killpg(started.pid, signal.SIGKILL) if leads else os.kill(started.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def stop(self) -> None:
        """Stop the launcher and everything it started (SIGTERM, then SIGKILL after the grace
        period), reap it, read what is left of its output and of the events, close the log."""
        if self.proc.poll() is None:
            self._signal_group(signal.SIGTERM)
            try:
                self.proc.wait(KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
        self._signal_group(signal.SIGKILL)  # what the launcher left in its group
        self.proc.wait()
        self._stop_local_ranks()
        for t in self._threads:
            t.join(timeout=5)
        self._log.close()
        self.update()
