"""The step clock: where each step begins, which phase of the schedule it is in, and when to stop.

`StepClock` is the part of the runtime every mode shares. The instrumented program calls it as
`__stepscope__` (instrument.py's `Runtime`):
- `iterate(iterable, label)` wraps the step loop's iterable: before each `next()` it marks a step
  boundary, and the `next()` itself runs inside the batch-read region.
- `step_boundary()` marks a boundary for `while` loops and step functions.
- `region(label)` is the region of one statement of the step; `step_call(label)` is a step
  function's whole call, and `returned(value)` what its `return` gives back (the recorder gets it as
  the call ends: a measure's value of the pass); `frame` and `line` (workspace
  functions below the step) come straight from the recorder; `compiling()` is torch's own
  "is torch.compile tracing this?" (compiled.compiling_probe), which Dynamo folds to True.

What is recorded around the steps is the `Recorder`'s business: the clock calls it at each
boundary and when the loop or the program ends, and the recorder says how many of the schedule's
cycles it has saved; the window is complete when all of them are. A profile's recorder is
profiling.ProfilerSession; a recorder that only times the steps needs no regions at all.

Invariants:
- Step `i`'s phase is `Schedule.phase(i)`; a "step" event is sent before each step begins, and a
  boundary that found the iterator exhausted (the end of an epoch) is no step: the next boundary
  continues the same step.
- Once the window is complete, the next boundary raises `WindowComplete` (unless the program is to
  run to its end), so the program stops at a step boundary, never inside a step. With an
  `after_window` (a profile's steps timed without the profiler), the program first runs on for as
  many boundaries as it wants; they are no steps of the schedule (no event, no phase).
  The batch read of those steps (the loop iterable's `next()`) is timed on the host and given to
  the `after_window` with the steps; the window's own is its region in the trace.
- Start-up (process start -> first boundary) and the host times of the steps before the window are
  recorded on their own and never mixed into the window.
- What the step is made of (probe.py) is observed once, in the first active step, and observing
  never breaks the program; for a step function, so is the code that called it
  (`observed["step_caller"]`, optimizer_steps.describe_caller).
- With a `unit` (a step function's optimizer_steps.StepUnit), a call that begins no step is no
  boundary: it only tells the recorder where the step's code runs (`at_boundary`).
"""

from __future__ import annotations

import sys
import time
from contextlib import nullcontext
from typing import Any, Callable, ContextManager, Iterable, Iterator, Protocol

from . import compiled
from .instrument import Runtime
from .protocol import Event, Schedule, StepEvent, WindowCompleteEvent

NULL_REGION: ContextManager[None] = nullcontext()


class WindowComplete(BaseException):
    """Raised at the next step boundary once the window is captured, to stop the program.

    A BaseException so that the program's own `except Exception:` blocks let it through, while
    its `finally:` and `with` blocks still run (files get closed).
    """


class Recorder(Protocol):
    """What a mode records around the clock's steps. Every method is called by the clock only."""

    def start(self) -> None:
        """The first boundary: step 0 is about to begin."""

    def next_step(self) -> int:
        """A later boundary: the step before has ended. Returns the cycles saved so far."""

    def stop(self) -> int:
        """The window completed, or the loop or the program ended first. Returns the cycles saved."""

    def step_begins(self, index: int, phase: str) -> bool:
        """Step `index` is about to begin; True when this took time that belongs to no step (the
        clock then takes the step's start again)."""

    def window_begins(self, previous_step_s: float | None) -> dict[str, Any]:
        """The window's first active step is about to begin; `previous_step_s`: the host time of
        the step before it. Returns what the recorder observed, for the scenario's `observed`."""

    def at_boundary(self) -> None:
        """Any boundary, even one that begins no step (called first)."""

    def restart_step(self) -> None:
        """The clock did work of its own as the step began (observing what it is made of): a
        recorder that times steps takes the step's start again."""

    def region(self, label: str) -> ContextManager[Any] | None:
        """The region of one statement of the step, or None when none is recorded."""

    def call_returned(self, value: Any = None, raised: bool = False) -> None:
        """The step function's call that began at the last boundary has returned `value` (or
        raised): the rest of the step, up to the next call, is what the program does between calls.
        Called from the function's own frame (its `with` ends), so its locals are still there."""

    def frame(self, label: str) -> ContextManager[Any]: ...

    def line(self, label: str) -> ContextManager[Any]: ...

    def outputs(self) -> list[str]:
        """The files written so far (a profile's traces)."""


class AfterWindow(Protocol):
    """Steps the program runs on once the window is complete, before it is stopped (a profile's
    steps timed without the profiler: timing.UnprofiledTail)."""

    def boundary(self) -> bool:
        """A step boundary after the window; True while more steps are wanted."""

    def batch_read(self, seconds: float) -> None:
        """The host time of the `next()` of the step loop's iterable in the step that just began."""

    def batches_prepared_ahead(self, batches: int) -> None:
        """The loop's data source prepares up to `batches` batches ahead (a DataLoader's workers)."""


class StepClock:
    def __init__(self, *, schedule: Schedule, recorder: Recorder, emit: Callable[[Event], None],
                 process_start: float, run_to_end: bool = False, after_window: AfterWindow | None = None,
                 unit: Any = None, in_workspace: Callable[[str], bool] | None = None) -> None:
        self.schedule = schedule
        self._unit = unit  # optimizer_steps.StepUnit of a step function: which calls begin a step
        self._in_workspace = in_workspace or (lambda path: False)
        self._after_window = after_window
        self.run_to_end = run_to_end
        self._recorder = recorder
        self._emit = emit
        self._process_start = process_start
        self.steps_started = 0
        self.boundary_times: list[float] = []
        self.first_boundary_at: float | None = None
        self.window_complete = False
        self._recording = False
        self._boundary_unused = False
        self._began_step = False  # whether the last boundary began a step (counted in steps_started)
        self._cycles_saved = 0
        self._window_started = False
        self.observed: dict[str, Any] = {}  # what the step is made of (probe.py), first active step
        self._modes_pending = False
        self.notes: list[dict[str, str]] = []
        # dynamo's counters when the first active step begins and when the last cycle is saved
        self.dynamo_at_window_start: dict[str, int] | None = None
        self.dynamo_at_window_end: dict[str, int] | None = None
        self._returning: list[Any] = []  # per step function call in progress (innermost last): what it returns

    # -- called by the instrumented program -------------------------------------------------
    def iterate(self, iterable: Iterable[Any], label: str) -> Iterator[Any]:
        iterator = iter(iterable)
        while True:
            self.step_boundary()
            # after the window, the batch read is timed on the host (a profile's steps without the
            # profiler): the window's own read is in the trace, as the region below
            tail = self._after_window if self.window_complete else None
            read_start = time.perf_counter() if tail is not None else 0.0
            with self.region(label):
                try:
                    item = next(iterator)
                except StopIteration:
                    self._boundary_unused = True
                    return
            if tail is not None:
                tail.batch_read(time.perf_counter() - read_start)
            if "batch" not in self.observed and self._in_active_step():
                self._observe(sys._getframe(1), iterable=iterable, item=item)
            yield item

    def step_boundary(self) -> None:
        now = time.perf_counter()
        self._recorder.at_boundary()
        if self._unit is not None and not self._unit.begins_step():
            return  # a call inside the step (a micro-batch of its optimizer step)
        self._began_step = False
        if self.window_complete:
            if self._after_window is not None:
                if self._boundary_unused:  # as in the window: an exhausted iterator began no step
                    self._boundary_unused = False
                    return
                if self._after_window.boundary():
                    return
                self._after_window = None
            if self.run_to_end:
                return
            raise WindowComplete
        if self._boundary_unused:
            # The last boundary found the iterator exhausted (end of an epoch): this step began
            # there, so it carries the time between epochs instead of counting a phantom step.
            self._boundary_unused = False
            index = self.steps_started - 1
            self._emit(StepEvent(index=index, phase=self.schedule.phase(index)))
            return
        self.boundary_times.append(now)
        if self.steps_started == 0:
            self.first_boundary_at = now
            self._recorder.start()
            self._recording = True
        else:
            self._saved(self._recorder.next_step())
            if self.window_complete:  # the step that just ended closed the window
                self._stop()
                if self._after_window is not None and self._after_window.boundary():
                    return  # the first step after the window begins (the profiler has stopped)
                self._after_window = None
                if not self.run_to_end:
                    raise WindowComplete
                return
        index = self.steps_started
        phase = self.schedule.phase(index)
        self._emit(StepEvent(index=index, phase=phase))
        if self._recorder.step_begins(index, phase):
            self.boundary_times[-1] = time.perf_counter()
        if not self._window_started and phase == "active":
            self._window_started = True
            self.dynamo_at_window_start = compiled.dynamo_counters()
            times = self.boundary_times
            self.observed.update(self._recorder.window_begins(times[-1] - times[-2] if len(times) >= 2 else None))
        self.steps_started += 1
        self._began_step = True
        if "models" not in self.observed and self._in_active_step():
            self._observe(sys._getframe(1))
            self._recorder.restart_step()  # observing is no part of the step

    def loop_end(self) -> None:
        """The step loop was left (it ended, or a break). Once the window is complete the program
        stops here, as at a boundary, rather than run the code after the loop (a checkpoint, an
        evaluation) — also when the loop ends among the steps timed after the window."""
        if self.window_complete and not self.run_to_end:
            raise WindowComplete

    def region(self, label: str) -> ContextManager[Any]:
        region = self._recorder.region(label)
        if region is None:
            return NULL_REGION
        if self._modes_pending:  # the modes in force as the step's first region begins
            self._modes_pending = False
            from .probe import describe_modes

            self.observed["modes"] = describe_modes()
        return region

    def step_call(self, label: str) -> ContextManager[Any]:
        """A step function's whole call: the def line's region, and the recorder told when it ends
        and what it returned (`returned`)."""
        return _StepCall(self.region(label), self._recorder, self._returning)

    def returned(self, value: Any) -> Any:
        """A step function's `return`: what the call returns, noted for its `step_call`, unchanged."""
        if self._returning:
            self._returning[-1] = value
        return value

    def runtime(self) -> "Runtime":
        """The object the instrumented program calls (`__stepscope__`): this clock's boundaries and
        step regions, the recorder's `frame` and `line` (bound once: they run for every statement
        of a workspace function)."""
        return _Runtime(self.iterate, self.step_boundary, self.loop_end, self.region, self.step_call, self.returned,
                        self._recorder.frame, self._recorder.line, compiled.compiling_probe())

    def where(self) -> tuple[int | None, str]:
        """The step running now and its phase: (None, "before") before the first step begins,
        (index, "after") once the window is complete."""
        if self.steps_started == 0:
            return None, "before"
        index = self.steps_started - 1
        return index, "after" if self.window_complete else self.schedule.phase(index)

    def note(self, kind: str, detail: str) -> None:
        self.notes.append({"kind": kind, "detail": detail})

    # -- the window -------------------------------------------------------------------------
    def _saved(self, cycles: int) -> None:
        if cycles <= self._cycles_saved:
            return
        self._cycles_saved = cycles
        self.dynamo_at_window_end = compiled.dynamo_counters()
        if cycles >= self.schedule.repeat and not self.window_complete:
            self.window_complete = True
            self._emit(WindowCompleteEvent(active_steps=self.active_steps_seen(),
                                           traces=tuple(self._recorder.outputs())))

    def _stop(self) -> None:
        if self._recording:
            self._recording = False
            self._saved(self._recorder.stop())

    def finish(self) -> None:
        """The loop or the program ended before the window closed: save what was recorded."""
        self._stop()

    def steps_run(self) -> int:
        """Steps that actually ran (a boundary that began a step but found the iterator exhausted
        is not one; one after the window began none to take back)."""
        return self.steps_started - (1 if self._boundary_unused and self._began_step else 0)

    def active_steps_seen(self) -> int:
        return sum(1 for i in range(self.steps_run()) if self.schedule.phase(i) == "active")

    def startup(self) -> dict[str, Any]:
        to_first = None
        if self.first_boundary_at is not None:
            to_first = (self.first_boundary_at - self._process_start) * 1e3
        before_window = self.schedule.wait + self.schedule.warmup
        times = self.boundary_times[: before_window + 1]
        first_steps = [(b - a) * 1e3 for a, b in zip(times, times[1:])]
        return {
            "to_first_step_ms": to_first,
            "first_steps_ms": first_steps,
            "clock": "host (boundary to boundary, no device synchronisation added)",
        }

    # -- what the step is made of -----------------------------------------------------------
    def _in_active_step(self) -> bool:
        return self.steps_started > 0 and self.schedule.phase(self.steps_started - 1) == "active"

    def _observe(self, frame: Any, *, iterable: Any = None, item: Any = None) -> None:
        from . import probe

        try:
            if frame is not None and frame.f_code.co_name == "iterate":
                frame = frame.f_back
            if "models" not in self.observed and frame is not None:
                models = probe.describe_models(frame.f_locals)
                if not models and frame.f_globals is not frame.f_locals:
                    models = probe.describe_models(frame.f_globals)
                self.observed["models"] = models
                self._modes_pending = True
                if iterable is None and frame.f_code.co_argcount:  # a function step: its arguments
                    names = frame.f_code.co_varnames[:frame.f_code.co_argcount]
                    self.observed["arguments"] = probe.describe_batch([frame.f_locals.get(n) for n in names])
                if iterable is None and self._unit is not None:  # a function step: who calls it
                    from .optimizer_steps import describe_caller

                    self.observed["step_caller"] = describe_caller(frame, self._in_workspace)
                self.observed["compiled_functions"] = probe.compiled_functions(frame.f_locals, frame.f_globals)
                group = probe.describe_process_group()
                if group is not None:
                    self.observed["process_group"] = group
            if iterable is not None:
                self.observed["data_source"] = source = probe.describe_source(iterable)
                ahead = source.get("prepared_ahead")
                if self._after_window is not None and isinstance(ahead, int) and ahead > 0:
                    self._after_window.batches_prepared_ahead(ahead)
                self.observed["batch"] = probe.describe_batch(item)
        except Exception as e:  # observing must never break the program
            self.observed["error"] = f"{type(e).__name__}: {e}"


class _StepCall:
    """`with` around a step function's call: its region, then the recorder's `call_returned` with what
    the call returned (its `return` statements pass it through `returned`; None where it ends
    without one), also when the call raises."""

    __slots__ = ("_region", "_recorder", "_returning")

    def __init__(self, region: ContextManager[Any], recorder: Recorder, returning: list[Any]) -> None:
        self._region, self._recorder, self._returning = region, recorder, returning

    def __enter__(self) -> None:
        self._returning.append(None)
        self._region.__enter__()

    def __exit__(self, *exc: Any) -> bool | None:
        value = self._returning.pop() if self._returning else None
        try:
            return self._region.__exit__(*exc)
        finally:
            self._recorder.call_returned(value, raised=exc[0] is not None)


class _Runtime:
    __slots__ = ("iterate", "step_boundary", "loop_end", "region", "step_call", "returned", "frame", "line",
                 "compiling")

    def __init__(self, iterate: Callable[..., Iterator[Any]], step_boundary: Callable[[], None],
                 loop_end: Callable[[], None], region: Callable[[str], ContextManager[Any]],
                 step_call: Callable[[str], ContextManager[Any]], returned: Callable[[Any], Any],
                 frame: Callable[[str], ContextManager[Any]], line: Callable[[str], ContextManager[Any]],
                 compiling: Callable[[], bool]) -> None:
        self.iterate, self.step_boundary, self.loop_end, self.region = iterate, step_boundary, loop_end, region
        self.step_call, self.returned = step_call, returned
        self.frame, self.line = frame, line
        self.compiling = compiling
