"""`--progress`: one line on stderr per step or pass a command runs, for a caller that shows
progress with a total (the MCP server does):

    stepscope: progress: DONE/TOTAL WHAT

Invariants:
- TOTAL is fixed when the command starts: every step (profile) or pass, warm-ups included, of
  every process of every side (measure, try).
- The first line says 0/TOTAL while the program starts; DONE then only grows, by one a line, and
  never passes TOTAL (a program that stops early ends below it).
- Each line is written whole, with one write, so it never interleaves with the program's output.
"""

from __future__ import annotations

import re
import sys
import threading
from typing import Any, Callable, TextIO

PREFIX = "progress: "
_LINE = re.compile(r"progress: (\d+)/(\d+) (.*)")


def parse(said: str) -> tuple[int, int, str] | None:
    """(done, total, what) of a line `said` (without `stepscope: `), or None for any other line."""
    match = _LINE.fullmatch(said)
    return (int(match[1]), int(match[2]), match[3]) if match else None


class Progress:
    """Counts steps or passes towards `total`, writing a line for each (nothing when `enabled` is false)."""

    def __init__(self, total: int, *, enabled: bool, stream: TextIO | None = None):
        self.total, self.enabled = total, enabled
        self._done = 0
        self._stream = stream
        self._lock = threading.Lock()  # events come from the runner's reader threads

    def start(self, what: str) -> None:
        self._write(0, what)

    def step(self, what: str) -> None:
        with self._lock:
            if self._done >= self.total:
                return
            self._done += 1
            done = self._done
        self._write(done, what)

    def _write(self, done: int, what: str) -> None:
        if self.enabled:
            stream = self._stream or sys.stderr
            stream.write(f"stepscope: {PREFIX}{done}/{self.total} {what}\n")
            stream.flush()


def on_step_events(progress: Progress, describe: Callable[..., str]) -> Callable[..., None]:
    """An `on_event` for the runner: each StepEvent advances `progress` by one, described by
    `describe(*args)` (the event last)."""
    from ..agent.protocol import StepEvent

    def on_event(*args: Any) -> None:
        if isinstance(args[-1], StepEvent):
            progress.step(describe(*args))

    return on_event
