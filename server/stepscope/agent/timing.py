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

`ValueProbe.capture(frame)` evaluates the value of a pass (the loss, or `--value EXPR`) in the
step's frame at the boundary that ends the pass. A tensor is kept (detached: its graph is freed)
and read after the passes, so reading it adds no synchronisation either. A tensor the program then
changes in place (its version counter moved) reads as unknown rather than as its final value; one
of several elements reads as their sum.

Stdlib + torch only (this runs in the user's interpreter); torch is imported lazily so that the
pure parts stay importable without it.
"""

from __future__ import annotations

import time
from typing import Any

HOST_CLOCK = "host clock (time.perf_counter), boundary to boundary"
CUDA_CLOCK = "CUDA events on the current stream, boundary to boundary (completion to completion)"


class StepTimer:
    def __init__(self) -> None:
        self._host: list[float] = []
        self._events: list[Any] = []  # a CUDA event per boundary, or None where CUDA was not in use

    def mark(self) -> None:
        """A step boundary: the step before (if any) ends and the next begins."""
        self._host.append(time.perf_counter())
        self._events.append(_record_cuda_event())

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


class BadValueExpression(Exception):
    """`--value EXPR` could not be evaluated in the step's frame (a one-line reason)."""


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
    return float(value)


def _read(kept: Any) -> float | None:
    if kept is None or isinstance(kept, float):
        return kept
    tensor, version = kept
    if tensor._version != version:  # changed in place since: its value now is not that pass's
        return None
    try:  # a tensor of several elements reads as their sum
        return float(tensor.double().sum()) if tensor.numel() != 1 else float(tensor)
    except (RuntimeError, TypeError, ValueError):
        return None
