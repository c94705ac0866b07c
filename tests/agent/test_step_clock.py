"""The step clock without the profiler (no torch needed): a program rewritten with the step
boundaries only runs its loop under a `StepClock` whose recorder records nothing but the steps,
as a timing mode does. The clock alone says where steps begin, their phases, and when the window
ends."""

from __future__ import annotations

import ast
import sys
import textwrap
import time
from pathlib import Path

import pytest

from stepscope.agent.instrument import RUNTIME_NAME, instrument_module
from stepscope.agent.program import ProgramFiles, run_script
from stepscope.agent.protocol import Schedule, StepEvent, Target, WindowCompleteEvent
from stepscope.agent.steps import StepClock, WindowComplete

PROGRAM = textwrap.dedent("""\
    import sys

    class Data:
        def __getitem__(self, i):
            with open(sys.argv[1], "a") as log:
                log.write(f"item {i}\\n")
            return i

    def work(x):
        total = 0
        for k in range(3):
            total += x * k
        return total

    data = Data()
    for i in range(20):
        batch = data[i]
        with open(sys.argv[1], "a") as log:
            log.write(f"step {i} {work(batch)}\\n")
    """)
STEP_LINE = 16


class StepsOnly:
    """A recorder that records nothing but the steps: a cycle is saved when its active steps end."""

    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule
        self.steps_ended = 0
        self.calls: list[str] = []

    def _cycles(self) -> int:
        return min(self.steps_ended // self.schedule.cycle, self.schedule.repeat)

    def start(self) -> None:
        self.calls.append("start")

    def next_step(self) -> int:
        self.steps_ended += 1
        return self._cycles()

    def stop(self) -> int:
        self.calls.append("stop")
        return self._cycles()

    def step_begins(self, index: int, phase: str) -> bool:
        return False

    def window_begins(self, previous_step_s: float | None) -> dict:
        self.calls.append(f"window at {self.steps_ended}")
        return {}

    def at_boundary(self) -> None:
        pass

    def restart_step(self) -> None:
        pass

    def region(self, label: str):
        return None

    def call_returned(self, value=None, raised: bool = False) -> None:
        self.calls.append("raised" if raised else f"returned {value!r}")

    def frame(self, label: str):
        raise AssertionError("a rewrite without regions never enters a frame")

    def line(self, label: str):
        raise AssertionError("a rewrite without regions never labels a line")

    def outputs(self) -> list[str]:
        return []


def _count(tree: ast.AST, kind: type) -> int:
    return sum(isinstance(node, kind) for node in ast.walk(tree))


def test_a_rewrite_without_regions_adds_only_the_step_boundaries():
    tree = ast.parse(PROGRAM)
    withs = _count(tree, ast.With)
    instrument_module(tree, "f0", step_line=STEP_LINE, regions=False)
    assert _count(tree, ast.With) == withs  # the program's own `with` statements, nothing added
    calls = [node.func.attr for node in ast.walk(tree) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
             and node.func.value.id == RUNTIME_NAME]
    assert sorted(calls) == ["iterate", "loop_end"]  # a boundary per step, and the loop's end
    with_regions = ast.parse(PROGRAM)
    instrument_module(with_regions, "f0", step_line=STEP_LINE)
    assert _count(with_regions, ast.With) > withs


def test_a_step_function_without_regions_gets_its_boundary_and_its_call_only():
    source = "def handle(x):\n    y = x + 1\n    return y\n\nfor i in range(3):\n    handle(i)\n"
    tree = ast.parse(source)
    instrument_module(tree, "f0", step_function="handle", regions=False)
    body = tree.body[0].body
    assert ast.unparse(body[0]).strip() == f"{RUNTIME_NAME}.step_boundary()"
    # the call's end is timed (measure's call figure), its statements get no region
    assert _count(tree, ast.With) == 1 and ast.unparse(body[1].items[0].context_expr) == \
        f"{RUNTIME_NAME}.step_call('ss:f0:1')"
    # its return passes what it returns to the runtime, unchanged
    assert [ast.unparse(s) for s in body[1].body] == ["y = x + 1", f"return {RUNTIME_NAME}.returned(y)"]


def test_the_clock_tells_the_recorder_when_a_step_functions_call_returns_and_what_even_when_it_raises():
    schedule = Schedule(wait=0, warmup=0, active=3, repeat=1)
    recorder = StepsOnly(schedule)
    clock = StepClock(schedule=schedule, recorder=recorder, emit=lambda event: None, process_start=time.perf_counter())
    runtime = clock.runtime()
    runtime.step_boundary()
    with runtime.step_call("ss:f0:1"):
        pass  # falls off its end: returns None
    runtime.step_boundary()
    with runtime.step_call("ss:f0:1"):
        with runtime.step_call("ss:f0:1"):  # a call to itself returns first, with its own value
            runtime.returned("inner")
        runtime.returned(42)
    runtime.step_boundary()
    with pytest.raises(ValueError):
        with runtime.step_call("ss:f0:1"):
            raise ValueError("the handler failed")
    assert recorder.calls == ["start", "window at 0", "returned None", "returned 'inner'", "returned 42", "raised"]


def test_a_calls_duration_runs_from_its_steps_boundary_to_its_first_return(monkeypatch: pytest.MonkeyPatch):
    from stepscope.agent import timing

    now = iter([0.0, 0.010, 0.040, 0.052, 0.080, 0.120]).__next__
    monkeypatch.setattr(timing.time, "perf_counter", now)
    timer = timing.StepTimer()
    timer.mark()          # call 1 begins at 0 ms
    timer.mark_return()   # returns at 10 ms
    timer.mark_return()   # an outer call of a call the function made to itself: not this step's
    timer.mark()          # call 2 begins at 40 ms
    timer.mark_return()   # returns at 52 ms
    timer.mark()          # call 3 begins at 80 ms, and never returns before ...
    timer.mark()          # ... the next boundary at 120 ms
    assert timer.durations()[0] == pytest.approx([40.0, 40.0, 40.0])
    assert timer.call_durations() == pytest.approx([10.0, 12.0, None])


def test_a_step_functions_call_is_one_region_of_its_def_line_around_its_statements():
    source = "def handle(x):\n    y = x + 1\n    return y\n\nfor i in range(3):\n    handle(i)\n"
    tree = ast.parse(source)
    instrument_module(tree, "f0", step_function="handle")
    body = tree.body[0].body
    assert ast.unparse(body[0]).strip() == f"{RUNTIME_NAME}.step_boundary()"  # the boundary first, outside
    assert len(body) == 2 and isinstance(body[1], ast.With)
    assert ast.unparse(body[1].items[0].context_expr) == f"{RUNTIME_NAME}.step_call('ss:f0:1')"  # the def line
    inner = [ast.unparse(w.items[0].context_expr) for w in body[1].body]
    assert inner == [f"{RUNTIME_NAME}.region('ss:f0:2')", f"{RUNTIME_NAME}.region('ss:f0:3')"]
    # a generator's call can suspend: its statements keep their regions, the call gets none
    generator = ast.parse("def handle(x):\n    y = x + 1\n    yield y\n")
    instrument_module(generator, "f0", step_function="handle")
    assert "ss:f0:1" not in ast.unparse(generator)


@pytest.mark.parametrize("repeat", [1, 2])
def test_the_clock_runs_a_program_without_the_profiler(tmp_path: Path, repeat: int, monkeypatch: pytest.MonkeyPatch):
    script = tmp_path / "train.py"
    script.write_text(PROGRAM)
    log = tmp_path / "log.txt"
    schedule = Schedule(wait=1, warmup=1, active=3, repeat=repeat)
    recorder = StepsOnly(schedule)
    events: list = []
    clock = StepClock(schedule=schedule, recorder=recorder, emit=events.append, process_start=time.perf_counter())
    files = ProgramFiles(str(tmp_path), Target(str(script), line=STEP_LINE), regions=False)
    monkeypatch.setattr(sys, "argv", sys.argv[:])  # run_script sets the program's argv
    monkeypatch.setattr(sys, "path", sys.path[:])
    with pytest.raises(WindowComplete):
        run_script(str(script), [str(log)], files, clock.runtime())

    steps = 5 * repeat
    assert [(e.index, e.phase) for e in events if isinstance(e, StepEvent)] == \
        [(i, schedule.phase(i)) for i in range(steps)]
    assert events[-1] == WindowCompleteEvent(active_steps=3 * repeat, traces=())
    assert clock.window_complete and clock.steps_run() == steps and clock.active_steps_seen() == 3 * repeat
    assert recorder.calls == ["start", "window at 2", "stop"]
    # the program stopped at the boundary after the window: every step it began, it finished
    assert [line.split()[1] for line in log.read_text().splitlines() if line.startswith("step")] == \
        [str(i) for i in range(steps)]
    startup = clock.startup()
    assert startup["to_first_step_ms"] > 0 and len(startup["first_steps_ms"]) == 2  # wait + warmup, before the window
    assert files.table()["files"] == {"f0": "train.py"}


def test_a_program_that_leaves_its_loop_after_the_window_stops_there():
    """The code after the step loop (a checkpoint, an evaluation) never runs once the window is
    complete, whether the loop ended or broke out among the steps timed after the window; unless
    the program is to run to its end."""
    from stepscope.agent.steps import StepClock, WindowComplete
    from stepscope.agent.timing import UnprofiledTail

    source = ("log = []\nfor i in range(STEPS):\n    log.append(i)\n    if i == BREAK_AT:\n        break\n"
              "log.append('after the loop')\n")
    schedule = Schedule(wait=0, warmup=0, active=2, repeat=1)
    for steps, break_at, run_to_end, after in ((4, -1, False, False), (10, 3, False, False), (4, -1, True, True)):
        tree = ast.parse(source)
        instrument_module(tree, "f0", step_line=2, regions=False)
        tail = UnprofiledTail(warmup=0, passes=10)  # wants more steps than the loop has left
        clock = StepClock(schedule=schedule, recorder=StepsOnly(schedule), emit=lambda event: None,
                          process_start=0.0, run_to_end=run_to_end, after_window=tail)
        namespace = {RUNTIME_NAME: clock.runtime(), "STEPS": steps, "BREAK_AT": break_at}
        try:
            exec(compile(tree, "prog.py", "exec"), namespace)
        except WindowComplete:
            pass
        assert ("after the loop" in namespace["log"]) is after, (steps, break_at, run_to_end)
        assert clock.window_complete and tail.timer.marks >= 2
        # the loop's end after the window takes back no step of the window (its last is ProfilerStep#1)
        assert clock.steps_run() == 2 and clock.active_steps_seen() == 2, (steps, break_at, run_to_end)
