"""How a run ended, classified without running anything (no torch): every ending the agent tells
apart, with the exit code and the one line the user reads."""

from __future__ import annotations

import pytest

from stepscope.agent import protocol
from stepscope.agent.main import Outcome, ProgramEnding, classify_outcome
from stepscope.agent.protocol import Schedule, Target

LOOP = Target("/ws/train.py", line=12)
FUNCTION = Target("/ws/serve.py", function="handle")
SCHEDULE = Schedule(wait=1, warmup=2, active=5)


def _classify(ending: ProgramEnding, *, window_complete: bool = False, steps_run: int = 0, active_steps: int = 0,
              target: Target = LOOP) -> Outcome:
    return classify_outcome(ending, window_complete=window_complete, steps_run=steps_run, active_steps=active_steps,
                            schedule=SCHEDULE, target=target)


@pytest.mark.parametrize("ending", [ProgramEnding("window-complete"), ProgramEnding("returned"),
                                    ProgramEnding("exited", status=2), ProgramEnding("raised", detail="OSError")])
def test_once_the_window_is_recorded_the_run_succeeded_whatever_the_program_did_next(ending: ProgramEnding):
    assert _classify(ending, window_complete=True, steps_run=8, active_steps=5) == Outcome(protocol.EXIT_OK)


def test_the_step_not_found_in_the_source():
    outcome = _classify(ProgramEnding("loop-not-found", detail="no for/while loop starts at line 12"))
    assert outcome == Outcome(protocol.EXIT_NO_STEP, "no for/while loop starts at line 12")


def test_the_program_raised_before_the_window_completed():
    outcome = _classify(ProgramEnding("raised", detail="RuntimeError at crash.py:9"), steps_run=3, active_steps=0)
    assert outcome == Outcome(protocol.EXIT_PROGRAM_FAILED,
                              "the program raised RuntimeError at crash.py:9 before the window completed")


@pytest.mark.parametrize("status", [1, "usage: train.py [-h]"])
def test_the_program_exited_with_a_failure_status_before_the_window_completed(status):
    outcome = _classify(ProgramEnding("exited", status=status), steps_run=2)
    assert outcome == Outcome(protocol.EXIT_PROGRAM_FAILED,
                              f"the program exited with status {status} before the window completed")


@pytest.mark.parametrize("ending", [ProgramEnding("returned"), ProgramEnding("exited", status=0),
                                    ProgramEnding("exited", status=None)])
def test_the_program_ended_well_without_reaching_the_step(ending: ProgramEnding):
    assert _classify(ending) == Outcome(protocol.EXIT_NO_STEP, "the program ended without reaching the loop at line 12")
    assert _classify(ending, target=FUNCTION) == Outcome(
        protocol.EXIT_NO_STEP, "the program ended without reaching a call of handle()")


def test_the_loop_ran_fewer_steps_than_the_window_needs():
    outcome = _classify(ProgramEnding("returned"), steps_run=2)
    assert outcome == Outcome(protocol.EXIT_PROGRAM_FAILED, (
        "the loop ran 2 steps, fewer than the 4 needed to reach the active window (wait 1 + warmup 2 + active 5 "
        "= 8); give it more data or lower --wait/--warmup"))


def test_the_loop_ended_inside_the_window_and_its_steps_are_reported():
    assert _classify(ProgramEnding("returned"), steps_run=5, active_steps=2) == Outcome(protocol.EXIT_OK)
