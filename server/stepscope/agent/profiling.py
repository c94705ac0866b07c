"""The profile mode's recorder: torch.profiler on the schedule, the line regions, and their cost.

`ProfilerSession` is the `steps.Recorder` of a profile run. The clock starts it at the first step
boundary and steps it at each later one; it gives the instrumented code its regions:
- `region(label)` (a statement of the step) is a `record_function` while the profiler runs;
- `frame(label)` counts calls into workspace functions; `line(label)` labels a statement of such a
  function while the profiler runs and the call is at most `depth` workspace frames below the step.
- The closure an optimizer's step runs (`optimizer.step(closure)`, as Lightning runs training_step
  and backward) is a region of its own while the profiler runs (`CLOSURE_LABEL`, through torch's
  global step pre-hook; not while torch.compile traces the step), so the optimizer's own update is
  told apart from the work it wraps.
- The regions' own cost is bounded, by counts alone: in the step before the first active step,
  regions and calls are counted per function; a function called at least `HOT_CALLS` times in it
  that opened at least `HOT_REGIONS` regions (a dataset's `__getitem__`, once per sample) is left
  whole for the whole window — its time stays on the line that calls it — and the scenario's
  `observed["lines_not_split"]` says which and why. Counts, not timings, decide, so the same code
  gets the same lines on a busy machine as on an idle one; the measured cost per region only prices
  what was saved.

- A light capture (`ProfileOptions.light`) asks torch's profiler to observe only user scopes
  (`record_function`: the steps, Stepscope's line regions, the optimizer's step) on the CPU side,
  while the device activity (kernels, copies, their runtime launches, from CUPTI) is recorded as
  ever: per-line wall, GPU time and launches stay, operators (and so their shapes, stacks and the
  forward-backward links) are not recorded. The scope is passed to torch's `_enable_profiler` for
  the session's own start and step calls only (`_user_scopes_only`); where this torch has no such
  parameter, the capture is full and `observed["capture"]` says so.

Invariants:
- One fresh `torch.profiler.profile` per run (events accumulate across start/stop otherwise).
- One trace per repeat cycle, exported when the cycle's active steps end (or when the loop ends
  inside them), named by the run contract (`protocol.run_file_name`).
- A trace file is written under a temporary name and linked into place: it is complete or absent,
  and an existing file is never replaced.
- CUPTI is let go when the profiler stops (`release_cupti_after_the_window`), so that the steps
  timed after the window run as an unprofiled process does.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from typing import Any, Iterator

from torch.profiler import ProfilerActivity, profile, record_function, schedule

from .protocol import CLOSURE_LABEL, TRACE, ProfileOptions, run_file_name
from .steps import NULL_REGION

HOT_CALLS = 16  # only a function called at least this often per step is ever left whole ...
HOT_REGIONS = 256  # ... and only when its statements would open at least this many regions per step
CALIBRATION_REGIONS = 200  # regions timed once to price one region on this machine


@contextmanager
def _user_scopes_only(enabled: bool) -> Iterator[None]:
    """While the profiler starts or steps: torch's `_enable_profiler` observes user scopes only."""
    if not enabled:
        yield
        return
    import torch.autograd.profiler as autograd_profiler
    from torch._C._profiler import RecordScope

    full = autograd_profiler._enable_profiler

    def user_scopes(config: Any, activities: Any, scopes: Any = None) -> Any:
        return full(config, activities, {RecordScope.USER_SCOPE})

    autograd_profiler._enable_profiler = user_scopes
    try:
        yield
    finally:
        autograd_profiler._enable_profiler = full


def light_capture_available() -> str | None:
    """None where this torch can observe user scopes only; otherwise why not, in words."""
    try:
        import torch.autograd.profiler as autograd_profiler
        from torch._C._profiler import RecordScope
    except ImportError as e:
        return f"this torch has no profiler scopes ({e})"
    enable = getattr(autograd_profiler, "_enable_profiler", None)
    if enable is None or not hasattr(RecordScope, "USER_SCOPE") or "scopes" not in (enable.__doc__ or ""):
        return "this torch's profiler takes no scopes"
    return None


def _region_cost() -> float:
    """Seconds one labelled region costs here (the profiler running, as in the window)."""
    start = time.perf_counter()
    for _ in range(CALIBRATION_REGIONS):
        with record_function("ss:cost"):
            pass
    return (time.perf_counter() - start) / CALIBRATION_REGIONS


class _Frame:
    """Context manager leaving a workspace function (one shared instance, no allocation):
    `ProfilerSession.frame` did the entering."""

    __slots__ = ("_session",)

    def __init__(self, session: "ProfilerSession") -> None:
        self._session = session

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> bool:
        session = self._session
        session.depth -= 1
        session._functions.pop()
        return False


def release_cupti_after_the_window(environ: Any = os.environ, cuda_version: str | None = None) -> bool:
    """Ask Kineto to finalise CUPTI when the profiler stops (TEARDOWN_CUPTI=1). Without it CUPTI
    stays attached for the rest of the process and every kernel launch after the window pays for it
    (pytorch/pytorch#144455; on the H200, a launch-bound step read 10% to 70% slower after a stopped
    profiler than before it): the steps timed after the window would read slow and the distortion
    low. Left as it is where the user set it, and below CUDA 12.6, where a teardown can crash a
    program that uses CUDA graphs. Returns whether it was set."""
    if "TEARDOWN_CUPTI" in environ:
        return False
    if cuda_version is None:
        import torch

        cuda_version = torch.version.cuda
    try:
        major, minor = (int(part) for part in str(cuda_version).split(".")[:2])
    except ValueError:  # no CUDA (None), or a version not read
        return False
    if (major, minor) < (12, 6):
        return False
    environ["TEARDOWN_CUPTI"] = "1"
    return True


class ProfilerSession:
    def __init__(self, *, run_dir: str, rank: int | None, options: ProfileOptions,
                 activities: list[ProfilerActivity]) -> None:
        sched = options.schedule
        if ProfilerActivity.CUDA in activities:
            release_cupti_after_the_window()
        self._run_dir, self._rank = run_dir, rank
        self._repeat = sched.repeat
        self.activities = activities
        self._profiler = profile(
            activities=activities,
            schedule=schedule(wait=sched.wait, warmup=sched.warmup, active=sched.active, repeat=sched.repeat),
            on_trace_ready=self._on_trace_ready,
            record_shapes=options.shapes,
            with_stack=options.stack,
            profile_memory=options.memory,
        )
        unavailable = light_capture_available() if options.light else None
        self._light = options.light and unavailable is None
        self.capture = {"capture": {"light": self._light, "asked": "light", "why_not": unavailable}} if options.light else {}
        self.traces_written: list[str] = []
        self._running = False
        self.max_depth = options.depth
        self.line_regions = options.line_regions  # False: step boundaries only (to measure our own overhead)
        self.bound_regions = options.bound_regions  # False: no function is left whole for its regions' cost
        self.depth = 0  # workspace frames entered and not yet left
        self._base_depth = 0  # depth at the last step boundary: the step's own level
        self._frame = _Frame(self)
        self._functions: list[str] = []  # labels of the workspace functions entered, innermost last
        self._whole: set[str] = set()  # functions whose statements get no region (see the module docstring)
        self._counting = True  # until the window's first active step: count regions per function
        self._regions: dict[str, int] = {}  # function label ("" = the step itself) -> regions, this step
        self._last_regions: dict[str, int] = {}  # the same, for the step before
        self._calls: dict[str, int] = {}
        self._last_calls: dict[str, int] = {}
        self._region_cost_s: float | None = None
        self._closure_hook: Any = None
        from .compiled import compiling_probe

        self._compiling = compiling_probe()

    # -- an optimizer's closure -----------------------------------------------------------------
    def _label_closure(self, optimizer: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
        """torch's step pre-hook: the closure given to `optimizer.step` runs in its own region."""
        if not self._running or not self.line_regions:
            return None
        positional = len(args) > 1 and "closure" not in kwargs
        closure = args[1] if positional else kwargs.get("closure")
        if not callable(closure) or self._compiling():
            return None

        def labelled(*a: Any, **k: Any) -> Any:
            with record_function(CLOSURE_LABEL):
                return closure(*a, **k)

        if positional:
            return (args[0], labelled, *args[2:]), kwargs
        return args, {**kwargs, "closure": labelled}

    # -- the clock's calls (steps.Recorder) ---------------------------------------------------
    def at_boundary(self) -> None:
        self._base_depth = self.depth

    def restart_step(self) -> None:
        pass  # what the profiler recorded stays: the window's first step holds the observing (window.py)

    def call_returned(self, value: Any = None, raised: bool = False) -> None:
        pass  # the call is its def line's region in the trace

    def start(self) -> None:
        from torch.optim.optimizer import register_optimizer_step_pre_hook

        self._closure_hook = register_optimizer_step_pre_hook(self._label_closure)
        with _user_scopes_only(self._light):
            self._profiler.start()
        self._running = True

    def next_step(self) -> int:
        with _user_scopes_only(self._light):
            self._profiler.step()
        return len(self.traces_written)

    def stop(self) -> int:
        if self._running:
            self._running = False
            self._profiler.stop()
        if self._closure_hook is not None:
            self._closure_hook.remove()
            self._closure_hook = None
        return len(self.traces_written)

    def step_begins(self, index: int, phase: str) -> bool:
        if not self._counting:
            return False
        self._last_regions, self._regions = self._regions, {}
        self._last_calls, self._calls = self._calls, {}
        if self._region_cost_s is None and self.line_regions and phase != "active":
            self._region_cost_s = _region_cost()
            return True  # the pricing is no part of the step
        return False

    def window_begins(self, previous_step_s: float | None) -> dict[str, Any]:
        if not self._counting:
            return {}
        self._counting = False
        return {**self.capture, **self._bound_region_cost(previous_step_s)}

    def outputs(self) -> list[str]:
        return list(self.traces_written)

    # -- called by the instrumented program ---------------------------------------------------
    def region(self, label: str):
        if not self._running or not self.line_regions:
            return None
        if self._counting:
            self._regions[""] = self._regions.get("", 0) + 1
        return record_function(label)

    def frame(self, label: str = "") -> _Frame:
        self.depth += 1
        self._functions.append(label)
        if self._counting:
            self._calls[label] = self._calls.get(label, 0) + 1
        return self._frame

    def line(self, label: str):
        if not self._running or not self.line_regions or not 0 <= self.depth - self._base_depth <= self.max_depth:
            return NULL_REGION
        function = self._functions[-1] if self._functions else ""
        if function in self._whole:
            return NULL_REGION
        if self._counting:
            self._regions[function] = self._regions.get(function, 0) + 1
        return record_function(label)

    # -- the regions' cost --------------------------------------------------------------------
    def _bound_region_cost(self, step_s: float | None) -> dict[str, Any]:
        """Leave whole the functions called at least `HOT_CALLS` times whose regions number at least
        `HOT_REGIONS` in the step before the window (see the module docstring): decided once, from counts."""
        if not self.bound_regions or not self._last_regions:
            return {}
        left_whole = []
        for function, n in sorted(self._last_regions.items(), key=lambda kv: (-kv[1], kv[0])):
            calls = self._last_calls.get(function, 0)
            if function and calls >= HOT_CALLS and n >= HOT_REGIONS:
                self._whole.add(function)
                left_whole.append({"function": function, "calls_per_step": calls, "regions_per_step": n})
        if not left_whole:
            return {}
        cost_us = None if self._region_cost_s is None else round(self._region_cost_s * 1e6, 2)
        return {"lines_not_split": {
            "functions": left_whole,
            "hot_calls": HOT_CALLS,
            "hot_regions": HOT_REGIONS,
            "region_cost_us": cost_us,
            "step_ms": None if step_s is None else round(step_s * 1000.0, 3),
        }}

    # -- the export ---------------------------------------------------------------------------
    def _on_trace_ready(self, prof: Any) -> None:
        path = os.path.join(self._run_dir, run_file_name(TRACE, self._rank, cycle=len(self.traces_written)))
        tmp = f"{path}.{os.getpid()}.partial"
        try:
            prof.export_chrome_trace(tmp)
            os.link(tmp, path)  # fails rather than replace an existing trace
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        self.traces_written.append(path)
