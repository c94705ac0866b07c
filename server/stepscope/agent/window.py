"""The profiling window around the step: torch.profiler on a schedule, driven by step boundaries.

`StepWindow` is the object the instrumented code calls as `__stepscope__`:
- `iterate(iterable, label)` wraps the step loop's iterable: before each `next()` it marks a step
  boundary, and the `next()` itself runs inside the batch-read region.
- `step_boundary()` marks a boundary for `while` loops.
- `region(label)` is a `record_function` context for one statement of the step itself.
- `frame(label)` counts calls into workspace functions; `line(label)` labels a statement of such a
  function while the window records and the call is at most `max_depth` workspace frames below
  the step.
- The regions' own cost is bounded: before the first active step, the regions of the step before
  it are counted per function and priced with a measured cost per region; if they would add more
  than `REGION_BUDGET` of that step's time, the functions with the most regions among those called
  at least `HOT_CALLS` times per step (a dataset's `__getitem__`, once per sample) are left whole
  for the whole window — their time stays
  on the line that calls them — and `observed["lines_not_split"]` says which and why.

Invariants:
- One fresh `torch.profiler.profile` per run (events accumulate across start/stop otherwise).
- The first boundary starts the profiler; each later one calls `prof.step()`; the trace is
  exported once, when the schedule's active window ends (or when the loop ends inside it).
- The trace file is written under a temporary name and renamed: it is complete or absent.
- Start-up (process start → first boundary) and the host-side times of the steps before the
  active window are recorded separately and never mixed into the window.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import nullcontext
from typing import Any, Callable, Iterable, Iterator

from torch.profiler import ProfilerActivity, profile, record_function, schedule

from . import compiled


def _region_cost() -> float:
    """Seconds one labelled region costs here (the profiler running, as in the window)."""
    start = time.perf_counter()
    for _ in range(CALIBRATION_REGIONS):
        with record_function("ss:cost"):
            pass
    return (time.perf_counter() - start) / CALIBRATION_REGIONS


class WindowComplete(BaseException):
    """Raised at the next step boundary once the window is captured, to stop the program.

    A BaseException so that the program's own `except Exception:` blocks let it through, while
    its `finally:` and `with` blocks still run (files get closed).
    """


_NULL = nullcontext()


REGION_BUDGET = 0.05  # largest share of a step's time the line regions may cost (estimated)
HOT_CALLS = 16  # only a function called at least this often per step is ever left whole
CALIBRATION_REGIONS = 200  # regions timed once to price one region on this machine


class _Frame:
    """Context manager leaving a workspace function (one shared instance, no allocation):
    `StepWindow.frame` did the entering."""

    __slots__ = ("_window",)

    def __init__(self, window: "StepWindow") -> None:
        self._window = window

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> bool:
        window = self._window
        window.depth -= 1
        window._functions.pop()
        return False


class StepWindow:
    def __init__(
        self,
        *,
        trace_path: str,
        wait: int,
        warmup: int,
        active: int,
        repeat: int,
        activities: list[ProfilerActivity],
        record_shapes: bool,
        with_stack: bool,
        profile_memory: bool,
        run_to_end: bool,
        max_depth: int = 2,
        line_regions: bool = True,
        bound_regions: bool = True,
        emit: Callable[..., None],
        process_start: float,
    ) -> None:
        self.trace_path = trace_path
        self.wait, self.warmup, self.active, self.repeat = wait, warmup, active, repeat
        self.run_to_end = run_to_end
        self._emit = emit
        self._process_start = process_start
        self._profiler = profile(
            activities=activities,
            schedule=schedule(wait=wait, warmup=warmup, active=active, repeat=repeat),
            on_trace_ready=self._on_trace_ready,
            record_shapes=record_shapes,
            with_stack=with_stack,
            profile_memory=profile_memory,
        )
        self.steps_started = 0
        self.boundary_times: list[float] = []
        self.first_boundary_at: float | None = None
        self.traces_written: list[str] = []
        self.window_complete = False
        self._running = False
        self._boundary_unused = False
        self.max_depth = max_depth
        self.line_regions = line_regions  # False: step boundaries only (to measure our own overhead)
        self.bound_regions = bound_regions  # False: no function is left whole for its regions' cost
        self.depth = 0  # workspace frames entered and not yet left
        self._base_depth = 0  # depth at the last step boundary: the step's own level
        self._frame = _Frame(self)
        self._functions: list[str] = []  # labels of the workspace functions entered, innermost last
        self._whole: set[str] = set()  # functions whose statements get no region (see the invariants)
        self._counting = True  # until the window's first active step: count regions per function
        self._regions: dict[str, int] = {}  # function label ("" = the step itself) -> regions, this step
        self._last_regions: dict[str, int] = {}  # the same, for the step before
        self._calls: dict[str, int] = {}
        self._last_calls: dict[str, int] = {}
        self._region_cost_s: float | None = None
        self.observed: dict[str, Any] = {}  # what the step is made of (probe.py), first active step
        self._modes_pending = False
        self.notes: list[dict[str, str]] = []
        # dynamo's counters when the first active step begins and when the last trace is written
        self.dynamo_at_window_start: dict[str, int] | None = None
        self.dynamo_at_window_end: dict[str, int] | None = None
        self._window_started = False

    # -- called by the instrumented program -------------------------------------------------
    def iterate(self, iterable: Iterable[Any], label: str) -> Iterator[Any]:
        iterator = iter(iterable)
        while True:
            self.step_boundary()
            with self.region(label):
                try:
                    item = next(iterator)
                except StopIteration:
                    self._boundary_unused = True
                    return
            if "batch" not in self.observed and self._in_active_step():
                self._observe(sys._getframe(1), iterable=iterable, item=item)
            yield item

    def step_boundary(self) -> None:
        now = time.perf_counter()
        self._base_depth = self.depth
        if self.window_complete:
            if self.run_to_end:
                return
            raise WindowComplete
        if self._boundary_unused:
            # The last boundary found the iterator exhausted (end of an epoch): this step began
            # there, so it carries the time between epochs instead of counting a phantom step.
            self._boundary_unused = False
            self._emit("step", index=self.steps_started - 1, phase=self.phase(self.steps_started - 1))
            return
        self.boundary_times.append(now)
        if self.steps_started == 0:
            self.first_boundary_at = now
            self._profiler.start()
            self._running = True
        else:
            self._profiler.step()
            if self.window_complete:  # the step that just ended closed the window
                self._stop()
                if not self.run_to_end:
                    raise WindowComplete
                return
        self._emit("step", index=self.steps_started, phase=self.phase(self.steps_started))
        if self._counting:
            self._last_regions, self._regions = self._regions, {}
            self._last_calls, self._calls = self._calls, {}
            if self._region_cost_s is None and self.line_regions and self.phase(self.steps_started) != "active":
                self._region_cost_s = _region_cost()
                self.boundary_times[-1] = time.perf_counter()  # the pricing is no part of the step
        if not self._window_started and self.phase(self.steps_started) == "active":
            self._window_started = True
            self.dynamo_at_window_start = compiled.dynamo_counters()
            if self._counting:
                self._counting = False
                self._bound_region_cost()
        self.steps_started += 1
        if "models" not in self.observed and self._in_active_step():
            self._observe(sys._getframe(1))

    def region(self, label: str):
        if not self._running or not self.line_regions:
            return _NULL
        if self._counting:
            self._regions[""] = self._regions.get("", 0) + 1
        if self._modes_pending:
            self._modes_pending = False
            from .probe import describe_modes

            self.observed["modes"] = describe_modes()
        return record_function(label)

    def frame(self, label: str = "") -> "_Frame":
        self.depth += 1
        self._functions.append(label)
        if self._counting:
            self._calls[label] = self._calls.get(label, 0) + 1
        return self._frame

    def line(self, label: str):
        if not self._running or not self.line_regions or not 0 <= self.depth - self._base_depth <= self.max_depth:
            return _NULL
        function = self._functions[-1] if self._functions else ""
        if function in self._whole:
            return _NULL
        if self._counting:
            self._regions[function] = self._regions.get(function, 0) + 1
        return record_function(label)

    def _bound_region_cost(self) -> None:
        """Leave whole the functions whose regions would cost more than the budget (see the
        module's invariants); decided once, from the step before the window."""
        if not self.bound_regions or not self._last_regions or self._region_cost_s is None \
                or len(self.boundary_times) < 2:
            return
        step_s = self.boundary_times[-1] - self.boundary_times[-2]
        cost = lambda n: n * self._region_cost_s  # noqa: E731
        total = sum(self._last_regions.values())
        if step_s <= 0 or cost(total) <= REGION_BUDGET * step_s:
            return
        left_whole = []
        for function, n in sorted(self._last_regions.items(), key=lambda kv: -kv[1]):
            if not function or self._last_calls.get(function, 0) < HOT_CALLS or cost(total) <= REGION_BUDGET * step_s:
                continue
            self._whole.add(function)
            total -= n
            left_whole.append({"function": function, "calls_per_step": self._last_calls.get(function, 0),
                               "regions_per_step": n})
        self.observed["lines_not_split"] = {
            "functions": left_whole,
            "region_cost_us": round(self._region_cost_s * 1e6, 2),
            "step_ms": round(step_s * 1000.0, 3),
            "budget": REGION_BUDGET,
        }

    def note(self, kind: str, detail: str) -> None:
        self.notes.append({"kind": kind, "detail": detail})

    # -- what the step is made of -------------------------------------------------------------
    def _in_active_step(self) -> bool:
        return self.steps_started > 0 and self.phase(self.steps_started - 1) == "active"

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
                self.observed["compiled_functions"] = probe.compiled_functions(frame.f_locals, frame.f_globals)
                group = probe.describe_process_group()
                if group is not None:
                    self.observed["process_group"] = group
            if iterable is not None:
                self.observed["data_source"] = probe.describe_source(iterable)
                self.observed["batch"] = probe.describe_batch(item)
        except Exception as e:  # observing must never break the program
            self.observed["error"] = f"{type(e).__name__}: {e}"

    # -- bookkeeping ------------------------------------------------------------------------
    def phase(self, index: int) -> str:
        cycle = self.wait + self.warmup + self.active
        if index >= cycle * max(1, self.repeat):
            return "after"
        k = index % cycle
        if k < self.wait:
            return "wait"
        if k < self.wait + self.warmup:
            return "warmup"
        return "active"

    def steps_run(self) -> int:
        """Steps that actually ran (a boundary that found the iterator exhausted is not one)."""
        return self.steps_started - (1 if self._boundary_unused else 0)

    def active_steps_seen(self) -> int:
        return sum(1 for i in range(self.steps_run()) if self.phase(i) == "active")

    def finish_early(self) -> None:
        """The loop or the program ended before the window closed: flush what was recorded."""
        if self._running:
            self._stop()

    def _stop(self) -> None:
        if self._running:
            self._running = False
            self._profiler.stop()

    def _on_trace_ready(self, prof: Any) -> None:
        # One trace per repeat cycle: trace.json, trace-1.json, ...
        cycle = len(self.traces_written)
        root, ext = os.path.splitext(self.trace_path)
        path = self.trace_path if cycle == 0 else f"{root}-{cycle}{ext}"
        tmp = f"{path}.{os.getpid()}.partial"
        try:
            prof.export_chrome_trace(tmp)
            os.link(tmp, path)  # fails rather than replace an existing trace
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        self.traces_written.append(path)
        self.dynamo_at_window_end = compiled.dynamo_counters()
        if len(self.traces_written) >= max(1, self.repeat):
            self.window_complete = True
            self._emit("window-complete", active_steps=self.active_steps_seen(), traces=self.traces_written)

    def startup(self) -> dict[str, Any]:
        to_first = None
        if self.first_boundary_at is not None:
            to_first = (self.first_boundary_at - self._process_start) * 1e3
        before_window = self.wait + self.warmup
        times = self.boundary_times[: before_window + 1]
        first_steps = [(b - a) * 1e3 for a, b in zip(times, times[1:])]
        return {
            "to_first_step_ms": to_first,
            "first_steps_ms": first_steps,
            "clock": "host (boundary to boundary, no device synchronisation added)",
        }
