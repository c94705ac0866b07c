"""One agent process: started in a session of its own, its output copied, its events read, stopped
as a group.

Invariants:
- The process leads its own session, so stopping its group stops the program and every worker it
  started (DataLoader workers included), and a signal meant for Stepscope (Ctrl-C in a terminal)
  never reaches the program behind Stepscope's back.
- Its events come from a pipe of its own (protocol.EVENTS_FD_ENV), typed by the run contract (a
  line that is no event of it is skipped). Its stdout and stderr are only copied, line by line, to
  its log file and to the caller's sink (with `prefix`), never parsed; the profiler's own
  start/stop trace lines (`USDT:… profiler_start`, which torch prints when the profiler starts and
  stops) reach the log file but not the sink, where they would only be noise.
- `failed_at` is the monotonic time at which this process was first seen failing: when its "failed"
  event arrived, else when its non-zero exit was seen. Compared across the ranks of a run, it names
  the rank that failed first (the others usually fail because that one went away).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections import deque
from pathlib import Path
from typing import Callable, TextIO

from ..agent import protocol
from ..agent.protocol import Event, FailedEvent, StepEvent


#: what torch's profiler prints itself when it starts and stops (not the program's output)
PROFILER_NOISE = re.compile(r"^USDT:\S+ \S+ \d+:\d+ \S+\.cpp:\d+\] profiler_(start|stop)\s*$")


def copy_lines(stream, log: TextIO, sink: TextIO | None, prefix: str, lock: threading.Lock,
               tail: deque | None = None) -> None:
    """Copy `stream` line by line to `log` and `sink` (see the module's invariants); `tail` (a
    bounded deque) keeps the last lines, for a reason to be read from them."""
    for chunk in iter(stream.readline, ""):
        if tail is not None:
            with lock:
                tail.append(chunk)
        try:
            log.write(chunk)
            log.flush()
        except (OSError, ValueError):
            pass
        if sink is None or PROFILER_NOISE.match(chunk):
            continue
        with lock:  # whole lines: ranks writing to one sink never interleave inside a line
            try:
                sink.write(prefix + chunk if prefix else chunk)
                sink.flush()
            except (OSError, ValueError):
                pass


class AgentProcess:
    """A started agent. Create with `AgentProcess.start`; end with `signal_group` and `finish`."""

    def __init__(self, proc: subprocess.Popen, log: TextIO, read_fd: int, *, rank: int | None,
                 sink: TextIO | None, prefix: str, sink_lock: threading.Lock,
                 on_event: Callable[[Event], None] | None):
        self.proc = proc
        self.rank = rank
        self.events: list[Event] = []
        self.last_step: StepEvent | None = None
        self._log = log
        self._on_event = on_event
        self._failed_event_at: float | None = None
        self._exited_at: float | None = None
        self._threads = [
            threading.Thread(target=copy_lines, args=(proc.stdout, log, sink, prefix, sink_lock), daemon=True),
            threading.Thread(target=copy_lines, args=(proc.stderr, log, sink, prefix, sink_lock), daemon=True),
        ]
        self._events_thread = threading.Thread(target=self._read_events, args=(read_fd,), daemon=True)
        for t in (*self._threads, self._events_thread):
            t.start()

    @classmethod
    def start(cls, cmd: list[str], *, cwd: str, env: dict[str, str], log_path: Path, rank: int | None = None,
              sink: TextIO | None = None, prefix: str = "", sink_lock: threading.Lock | None = None,
              on_event: Callable[[Event], None] | None = None) -> "AgentProcess":
        """Start `cmd` with a fresh events pipe. Raises OSError when the interpreter cannot start."""
        read_fd, write_fd = os.pipe()
        env = {**env, protocol.EVENTS_FD_ENV: str(write_fd)}
        log = open(log_path, "w", encoding="utf-8", errors="replace")
        try:
            proc = subprocess.Popen(
                cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8",
                errors="replace", pass_fds=(write_fd,), start_new_session=True,
            )
        except OSError:
            log.close()
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)  # the agent holds the only write end: the pipe ends when it does
        return cls(proc, log, read_fd, rank=rank, sink=sink, prefix=prefix,
                   sink_lock=sink_lock or threading.Lock(), on_event=on_event)

    def _read_events(self, read_fd: int) -> None:
        with os.fdopen(read_fd, encoding="utf-8", errors="replace") as f:
            for line in f:
                event = protocol.decode_event(line)
                if event is None:
                    continue
                if isinstance(event, FailedEvent) and self._failed_event_at is None:
                    self._failed_event_at = time.monotonic()
                elif isinstance(event, StepEvent):
                    self.last_step = event
                self.events.append(event)
                if self._on_event is not None:
                    self._on_event(event)

    # -- state --------------------------------------------------------------------------------
    def poll(self) -> int | None:
        code = self.proc.poll()
        if code is not None and self._exited_at is None:
            self._exited_at = time.monotonic()
        return code

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    @property
    def failed_at(self) -> float | None:
        exited_badly = self._exited_at if self.returncode not in (None, protocol.EXIT_OK) else None
        times = [t for t in (self._failed_event_at, exited_badly) if t is not None]
        return min(times) if times else None

    def failure(self) -> FailedEvent | None:
        """The agent's last "failed" event (its `reason` and agent `exit` code), if it sent one."""
        failed = [e for e in self.events if isinstance(e, FailedEvent)]
        return failed[-1] if failed else None

    def failure_reason(self) -> str | None:
        failed = self.failure()
        return failed.reason if failed else None

    def where(self) -> str:
        """How far the program got, from its step events: for messages about a stopped run."""
        if self.last_step is None:
            return "before its first step"
        return f"in step {self.last_step.index + 1} ({self.last_step.phase})"

    # -- ending -------------------------------------------------------------------------------
    def signal_group(self, sig: signal.Signals) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass  # the whole group is gone already

    def finish(self) -> None:
        """Reap the process, read what is left of its output and events, close its log."""
        self.proc.wait()
        for t in (*self._threads, self._events_thread):
            t.join(timeout=5)
        self._log.close()
