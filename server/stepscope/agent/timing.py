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

`ValueProbe` reads the value of a pass (the loss, or `--value EXPR`): for a loop's step, in the
step's frame at the boundary that ends the pass; for a step function, in the function's frame as
the call that began the pass returns, where `return` in the expression is what the call returned,
and the default is that return value read as a loss (a number or one-element tensor; a dict's or an
output's `loss`; a tuple's first element), else the function's own `loss`. A tensor is kept
(detached: its graph is freed) and read after the passes, so reading it adds no synchronisation
either. A tensor the program then changes in place (its version counter moved) reads as unknown
rather than as its final value; one of several elements reads as their sum (a step function's
return value by default only when it is one element: a batch of outputs is not kept); a dict, an
output object or a tuple reads as above; NaN or an infinity reads as unknown (not a number).

Stdlib + torch only (this runs in the user's interpreter); torch is imported lazily so that the
pure parts stay importable without it.
"""

from __future__ import annotations

import math
import os
import sys
import time
from contextlib import nullcontext
from typing import Any, Mapping

from .protocol import RETURN_NAME, RETURN_WORD, uses_return, value_source

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

    def mark_return(self) -> bool:
        """The step function's call that began at the last boundary returned. Only the first return
        after a boundary counts (True): a call the step function makes to itself returns before it."""
        index = len(self._host) - 1
        if index >= 0 and index not in self._returns:
            self._returns[index] = (time.perf_counter(), _record_cuda_event())
            return True
        return False

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
    """The value of each pass: `expression` evaluated in the step's frame ("loss" by default, where a
    missing name is simply no value; a `--value` the frame cannot evaluate is an error). For a step
    function (`function_step`), the frame is the function's as its call returns, `return` in the
    expression is what it returned, and the default is that return value read as a loss, else (no
    call returned one) the function's `loss`."""

    DEFAULT = "loss"

    def __init__(self, expression: str | None, *, function_step: bool = False) -> None:
        self.explicit = expression is not None
        self.expression = expression or (RETURN_WORD if function_step else self.DEFAULT)
        self._code = compile(value_source(self.expression), "<--value>", "eval")
        self._reads_return = uses_return(self.expression)
        self._just_returned = self.expression.strip() == RETURN_WORD
        self._where = "the step function's frame as it returns" if function_step else "the step's frame"
        # the default of a step function: the return value, else its `loss` (kept beside, chosen after)
        self._fallback_code = compile(self.DEFAULT, "<--value>", "eval") if function_step and not self.explicit \
            else None
        self._kept: list[Any] = []  # per pass: (tensor, version) | float | None
        self._fallback: list[Any] = []

    def capture(self, frame: Any) -> None:
        """Read the pass that just ended from the step's frame (a loop's step)."""
        self.add(self.read(frame))

    def read(self, frame: Any, returned: Any = None) -> tuple[Any, Any]:
        """What a pass's value is, kept to be read after the passes (and the default's other
        reading); `returned`: what the step function's call returned."""
        # the default of a step function is the return value itself: no expression to evaluate
        value = returned if self._just_returned else self._evaluate(self._code, frame, returned, self.explicit)
        if self._fallback_code is None:
            return _keep(value), None
        return _keep(value, whole=False), _keep(self._evaluate(self._fallback_code, frame, returned, False))

    def add(self, kept: tuple[Any, Any] | None) -> None:
        """One more pass, with what `read` kept (None: no value, as for a call that never returned)."""
        value, fallback = kept if kept is not None else (None, None)
        self._kept.append(value)
        self._fallback.append(fallback)

    def _evaluate(self, code: Any, frame: Any, returned: Any, explicit: bool) -> Any:
        names = frame.f_locals
        if self._reads_return and code is self._code:
            names = {**names, RETURN_NAME: returned}
        try:
            return eval(code, frame.f_globals, names)  # noqa: S307 (the user's own expression)
        except NameError:
            if explicit:
                raise BadValueExpression(f"--value {self.expression!r}: a name is not defined in {self._where}") \
                    from None
        except Exception as e:
            if explicit:
                raise BadValueExpression(f"--value {self.expression!r}: {type(e).__name__}: {e}") from None
        return None

    def values(self) -> list[float | None] | None:
        """Every pass's value as a float (read now, after the passes); None when no pass had one.
        A step function's default falls back to its `loss` (and `expression` says so) when no call
        returned a value."""
        out = [_read(k) for k in self._kept]
        if self._fallback_code is not None and all(v is None for v in out):
            fallback = [_read(k) for k in self._fallback]
            if any(v is not None for v in fallback):
                self.expression = self.DEFAULT
                return fallback
        return out if any(v is not None for v in out) else None


def _as_loss(value: Any) -> Any:
    """The loss a value holds: a mapping's or an output object's `loss` (an HF output, Lightning's
    `{"loss": ...}`), a tuple's or list's first element (`return loss, logits`); else the value."""
    import torch

    for _ in range(3):  # `{"loss": (loss, ...)}` at most
        if isinstance(value, torch.Tensor) or value is None:
            return value
        if isinstance(value, Mapping):
            value = value.get("loss")
        elif isinstance(value, (tuple, list)):
            value = value[0] if value else None
        elif hasattr(value, "loss"):
            value = value.loss
        else:
            return value
    return value


def _keep(value: Any, whole: bool = True) -> Any:
    """What to keep of a pass's value until after the passes: a detached tensor and its version, a
    float, or None. `whole=False`: a tensor of several elements is not kept (no batch of outputs is
    held for every pass)."""
    import torch

    value = _as_loss(value)
    if isinstance(value, torch.Tensor):
        if not whole and value.numel() != 1:
            return None
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

    def __init__(self, *, warmup: int, passes: int, value: str | None, function_step: bool = False) -> None:
        self.warmup, self.passes = warmup, passes
        self.timer = StepTimer()
        self.probe = ValueProbe(value, function_step=function_step)
        # A step function's locals are gone when the next call begins: its value is read as the call
        # that began the pass returns, and kept for the boundary that ends the pass.
        self.function_step = function_step
        self._returned: tuple[Any, Any] | None = None
        self._calls_returned = False

    # -- steps.Recorder ------------------------------------------------------------------------
    def start(self) -> None:
        self.timer.mark()

    def next_step(self) -> int:
        if self.function_step:
            self.probe.add(self._returned)
            self._returned = None
        else:
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

    def call_returned(self, value: Any = None, raised: bool = False) -> None:
        self._calls_returned = True
        if self.timer.mark_return() and self.function_step and not raised:
            frame = user_frame()  # the step function's, as its `with` ends
            if frame is not None:
                self._returned = self.probe.read(frame, value)  # BadValueExpression ends the run

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
            "value": self.probe.expression,
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
