"""Timing steps without the profiler, and without adding a synchronisation to the program.

`StepTimer.mark()` is called at every step boundary. It takes the host clock and, when the program
uses CUDA (or ROCm, which torch calls cuda), records a CUDA event on the current stream of the
current device. Nothing waits: an event record is queued like a kernel. After the passes,
`durations()` waits once for the last event and reads every interval.

What one step's time is (docs/measure.md says why):
- With CUDA events: from the moment the device reached the boundary before the step (the previous
  step's work on that stream was done, and the host had got there) to the moment it reached the
  boundary after it. That is completion to completion: a step whose kernels run behind its host
  code is charged for them; a step whose device waits for the host is charged for the wait. Work
  the program puts on *other* streams counts only where the current stream waits for it (as it
  does when the program joins the streams before using the results).
- Without CUDA: host clock (`time.perf_counter`) boundary to boundary, which is the whole step on
  the CPU.

`StepTimer.mark_return()` is called when a step function's call returns: the call itself runs
from the boundary that began the step to that return, read with the same clock (a CUDA event is
recorded at the return too), so `call_durations()` is never longer than the step it is in.

`ValueProbe.capture(frame)` evaluates the value of a pass (the loss, or `--value EXPR`) in the
step's frame at the boundary that ends the pass. A tensor is kept (detached: its graph is freed)
and read after the passes, so reading it adds no synchronisation either. A tensor the program then
changes in place (its version counter moved) reads as unknown rather than as its final value; one
of several elements reads as their sum; NaN or an infinity reads as unknown (not a number).

Stdlib + torch only (this runs in the user's interpreter); torch is imported lazily so that the
pure parts stay importable without it.
"""

from __future__ import annotations

import math
import os
import sys
import time
from contextlib import nullcontext
from typing import Any

_NULL = nullcontext()
HOST_CLOCK = "host clock (time.perf_counter), boundary to boundary"
CUDA_CLOCK = "CUDA events on the current stream, boundary to boundary (completion to completion)"


class StepTimer:
    def __init__(self) -> None:
        self._host: list[float] = []
        self._events: list[Any] = []  # a CUDA event per boundary, or None where CUDA was not in use
        self._returns: dict[int, tuple[float, Any]] = {}  # boundary index -> its call's return (host, event)

    def mark(self) -> None:
        """A step boundary: the step before (if any) ends and the next begins."""
        self._host.append(time.perf_counter())
        self._events.append(_record_cuda_event())

    def remark(self) -> None:
        """Take the last boundary again (the time since it belongs to no step)."""
        if self._host:
            self._host[-1] = time.perf_counter()
            self._events[-1] = _record_cuda_event()

    def mark_return(self) -> None:
        """The step function's call that began at the last boundary returned. Only the first return
        after a boundary counts: a call the step function makes to itself returns before it."""
        index = len(self._host) - 1
        if index >= 0 and index not in self._returns:
            self._returns[index] = (time.perf_counter(), _record_cuda_event())

    @property
    def marks(self) -> int:
        return len(self._host)

    def last_interval_host_s(self) -> float | None:
        return self._host[-1] - self._host[-2] if len(self._host) >= 2 else None

    def durations(self) -> tuple[list[float], list[str]]:
        """Every interval between consecutive marks in ms, and the clock each was read with.
        Waits for the device once (the last event), after the passes."""
        last = next((e for e in reversed(self._events) if e is not None), None)
        if last is not None:
            last.synchronize()
        out, clocks = [], []
        for i in range(1, len(self._host)):
            start, end = self._events[i - 1], self._events[i]
            if start is not None and end is not None:
                out.append(float(start.elapsed_time(end)))
                clocks.append("cuda")
            else:
                out.append((self._host[i] - self._host[i - 1]) * 1000.0)
                clocks.append("host")
        return out, clocks

    def call_durations(self) -> list[float | None]:
        """Per interval (as `durations()`), the call that began it, in ms: None where no call
        returned before the next boundary. Call after `durations()` (which waits for the device)."""
        out: list[float | None] = []
        for i in range(1, len(self._host)):
            returned = self._returns.get(i - 1)
            if returned is None:
                out.append(None)
                continue
            host, event = returned
            start = self._events[i - 1]
            if start is not None and event is not None:
                out.append(float(start.elapsed_time(event)))
            else:
                out.append((host - self._host[i - 1]) * 1000.0)
        return out


def clock_words(clocks: list[str]) -> str:
    if clocks and all(c == "cuda" for c in clocks):
        return CUDA_CLOCK
    if not clocks or all(c == "host" for c in clocks):
        return HOST_CLOCK
    return f"{CUDA_CLOCK}; {clocks.count('host')} pass(es) before CUDA was in use: {HOST_CLOCK}"


def _record_cuda_event() -> Any:
    import torch

    if not torch.cuda.is_initialized():  # never initialise CUDA for a program that does not use it
        return None
    event = torch.cuda.Event(enable_timing=True)
    event.record()  # the current stream of the current device: queued, nothing waits
    return event


class BadValueExpression(BaseException):
    """`--value EXPR` could not be evaluated in the step's frame (a one-line reason). A
    BaseException, like steps.WindowComplete, so that the program's own `except Exception:`
    blocks let it through to the agent."""


class ValueProbe:
    """The value of each pass: `expression` evaluated in the step's frame ("loss" by default,
    where a missing name is simply no value; a `--value` the frame cannot evaluate is an error)."""

    DEFAULT = "loss"

    def __init__(self, expression: str | None) -> None:
        self.expression = expression or self.DEFAULT
        self.explicit = expression is not None
        self._code = compile(self.expression, "<--value>", "eval")
        self._kept: list[Any] = []  # per pass: (tensor, version) | float | None

    def capture(self, frame: Any) -> None:
        try:
            value = eval(self._code, frame.f_globals, frame.f_locals)  # noqa: S307 (the user's own expression)
        except NameError:
            if self.explicit:
                raise BadValueExpression(f"--value {self.expression!r}: a name is not defined in the step's frame") from None
            value = None
        except Exception as e:
            if self.explicit:
                raise BadValueExpression(f"--value {self.expression!r}: {type(e).__name__}: {e}") from None
            value = None
        self._kept.append(_keep(value))

    def values(self) -> list[float | None] | None:
        """Every pass's value as a float (read now, after the passes); None when no pass had one."""
        out = [_read(k) for k in self._kept]
        return out if any(v is not None for v in out) else None


def _keep(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        t = value.detach()
        return (t, t._version)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _read(kept: Any) -> float | None:
    if kept is None or isinstance(kept, float):
        return kept
    tensor, version = kept
    if tensor._version != version:  # changed in place since: its value now is not that pass's
        return None
    try:  # a tensor of several elements reads as their sum
        value = float(tensor.double().sum()) if tensor.numel() != 1 else float(tensor)
    except (RuntimeError, TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None  # NaN / inf: not a number (and no JSON number either)


_AGENT_DIR = os.path.dirname(os.path.abspath(__file__))
_IS_AGENT: dict[str, bool] = {}  # a code object's file name -> whether it is the agent's (once per file)


def user_frame() -> Any:
    """The innermost frame of the user's program (the step loop's frame, or the step function's
    caller at a boundary): the first frame, going out, that is not the agent's own."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        agent = _IS_AGENT.get(name)
        if agent is None:
            agent = _IS_AGENT[name] = os.path.dirname(os.path.abspath(name)) == _AGENT_DIR
        if not agent:
            return frame
        frame = frame.f_back
    return None


class TimingRecorder:
    """The measure mode's recorder (steps.Recorder): no profiler, no regions; a timer mark at every
    step boundary and the value of the step that just ended. Its one "cycle" is saved when the
    warm-up and the timed passes have all ended."""

    def __init__(self, *, warmup: int, passes: int, value: str | None, capture_values: bool = True) -> None:
        self.warmup, self.passes = warmup, passes
        self.timer = StepTimer()
        self.probe = ValueProbe(value)
        # A function step's locals are gone when the next call begins: its values are not kept.
        self.capture_values = capture_values
        self._calls_returned = False

    # -- steps.Recorder ------------------------------------------------------------------------
    def start(self) -> None:
        self.timer.mark()

    def next_step(self) -> int:
        if self.capture_values:
            frame = user_frame()
            if frame is not None:
                self.probe.capture(frame)  # BadValueExpression ends the run (main.py says why)
        self.timer.mark()
        return 1 if self.timer.marks >= self.warmup + self.passes + 1 else 0

    def stop(self) -> int:
        return 1 if self.timer.marks >= self.warmup + self.passes + 1 else 0

    def step_begins(self, index: int, phase: str) -> bool:
        return False

    def window_begins(self, previous_step_s: float | None) -> dict[str, Any]:
        return {}

    def at_boundary(self) -> None:
        pass

    def restart_step(self) -> None:
        self.timer.remark()

    def call_returned(self) -> None:
        self._calls_returned = True
        self.timer.mark_return()

    def region(self, label: str) -> None:
        return None  # no regions: the rewrite adds none either (ProgramFiles(regions=False))

    def frame(self, label: str) -> Any:
        return _NULL

    def line(self, label: str) -> Any:
        return _NULL

    def outputs(self) -> list[str]:
        return []

    # -- the record ----------------------------------------------------------------------------
    def record(self) -> dict[str, Any]:
        """The timings record (protocol.TIMINGS), read now: after the passes."""
        durations, clocks = self.timer.durations()
        values = self.probe.values()  # one per pass that ended, warm-up ones first
        record = {
            "warmup_ms": durations[: self.warmup],
            "raw_ms": durations[self.warmup:],
            "values": values[self.warmup:] if values is not None else None,
            "value": self.probe.expression if self.capture_values else None,
            "clock": clock_words(clocks[self.warmup:] or clocks),
            "warmup_asked": self.warmup,
            "passes_asked": self.passes,
        }
        if self._calls_returned:  # a step function's calls: each pass's call apart from the time between
            record["call_ms"] = self.timer.call_durations()[self.warmup:]
        return record


class UnprofiledTail:
    """The steps a profile run times after its window, without the profiler: `warmup` steps, then
    `passes` timed ones (the same counts as before and inside the window).

    Where the loop iterates a DataLoader whose workers keep batches ready, the warm-up is at least
    one step more than those batches: the trace's export pauses the loop, the workers fill their
    queue meanwhile, and steps that find their batch ready are not the loop's pace. The host time of
    each step's batch read is kept beside the step's time (`batch_read_ms`), so the report can say
    whether the window's steps waited for data as these do."""

    def __init__(self, *, warmup: int, passes: int) -> None:
        self.warmup, self.passes = warmup, passes
        self.warmup_asked = warmup
        self.timer = StepTimer()
        self._reads: dict[int, float] = {}  # step index after the window -> host seconds in next()

    def boundary(self) -> bool:
        """A step boundary after the window; True while more steps are wanted."""
        if self.timer.marks < self.warmup + self.passes + 1:
            self.timer.mark()
        return self.timer.marks < self.warmup + self.passes + 1

    def batch_read(self, seconds: float) -> None:
        index = self.timer.marks - 1
        self._reads[index] = self._reads.get(index, 0.0) + seconds

    def batches_prepared_ahead(self, batches: int) -> None:
        if self.timer.marks == 0:  # decided before the first step after the window, never during
            self.warmup = max(self.warmup, batches + 1)

    def record(self) -> dict[str, Any] | None:
        if self.timer.marks < 2:
            return None
        durations, clocks = self.timer.durations()
        reads = [self._reads[i] * 1000.0 if i in self._reads else None for i in range(len(durations))]
        record = {"warmup_ms": durations[: self.warmup], "raw_ms": durations[self.warmup:],
                  "values": None, "clock": clock_words(clocks[self.warmup:] or clocks),
                  "warmup_asked": self.warmup, "passes_asked": self.passes}
        if any(r is not None for r in reads):
            record["batch_read_ms"] = reads[self.warmup:]
            record["batch_read_clock"] = HOST_CLOCK
        if self.warmup != self.warmup_asked:
            record["warmup_note"] = (f"{self.warmup} warm-up steps rather than {self.warmup_asked}: the DataLoader's "
                                     f"workers keep {self.warmup - 1} batches ready, and the steps that use them up "
                                     "after a pause are not the loop's pace")
        return record

    def note(self) -> str | None:
        """Why the unprofiled figure is missing or short, or None when every step was timed."""
        timed = max(0, self.timer.marks - 1 - self.warmup)
        if timed >= self.passes:
            return None
        if timed == 0:
            return (f"the loop ended before any step could be timed without the profiler after the window "
                    f"({self.warmup} warm-up + {self.passes} timed steps wanted): no unprofiled figure, so the "
                    "profiler's distortion is unknown; give the loop more steps")
        return (f"the loop ended after {timed} of the {self.passes} steps timed without the profiler after the "
                "window: the unprofiled figure is over those")
