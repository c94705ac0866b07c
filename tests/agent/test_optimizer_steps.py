"""Which calls of a step function begin a step (agent/optimizer_steps.py), with real torch optimizers:
one optimizer step and its micro-batches, each call when asked or without an optimizer, and who
calls the step."""

from __future__ import annotations

import sys

import pytest

torch = pytest.importorskip("torch")

from stepscope.agent import optimizer_steps  # noqa: E402
from stepscope.agent.optimizer_steps import StepUnit, describe_caller  # noqa: E402

pytestmark = pytest.mark.torch


@pytest.fixture
def unit():
    made = []

    def make(**kw):
        u = StepUnit(**kw)
        u.install()
        made.append(u)
        return u

    yield make
    for u in made:
        u.uninstall()


def _model_and_optimizer():
    model = torch.nn.Linear(4, 1)
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def _micro_batch(model) -> None:
    model(torch.randn(2, 4)).sum().backward()


def test_under_gradient_accumulation_a_step_is_one_optimizer_step_of_its_micro_batches(unit) -> None:
    model, optimizer = _model_and_optimizer()
    u = unit(micro_batch=False)
    begins = []
    for i in range(12):  # accumulate 4: the optimizer steps after every 4th call
        begins.append(u.begins_step())
        _micro_batch(model)
        if i % 4 == 3:
            optimizer.step()
            optimizer.zero_grad()
    assert begins == [True, False, False, False] * 3
    assert u.unit == "optimizer step" and u.calls == [4, 4, 4] and u.optimizer_steps == [1, 1, 1]
    record = u.record(lambda i: "active" if i >= 1 else "wait")
    assert record == {"unit": "optimizer step", "reason": "the program steps an optimizer", "active_steps": 2,
                      "calls": 8, "optimizer_steps": 2}


def test_a_call_made_inside_optimizer_step_begins_a_step_each_time(unit) -> None:
    model, optimizer = _model_and_optimizer()
    u = unit(micro_batch=False)
    begins = []

    def closure():  # as Lightning runs training_step and its backward inside optimizer.step(closure)
        begins.append(u.begins_step())
        _micro_batch(model)

    for _ in range(3):
        optimizer.step(closure)
    assert begins == [True, True, True] and u.optimizer_steps == [1, 1, 1]


def test_an_optimizer_stepped_through_a_wrapper_counts_once(unit) -> None:
    model, inner = _model_and_optimizer()

    class Wrapper(torch.optim.Optimizer):  # as Accelerate's AcceleratedOptimizer steps the torch one
        def __init__(self, optimizer):
            super().__init__(optimizer.param_groups, optimizer.defaults)
            self.optimizer = optimizer

        def step(self, closure=None):
            return self.optimizer.step(closure)

    outer = Wrapper(inner)
    u = unit(micro_batch=False)
    u.begins_step()
    _micro_batch(model)
    outer.step()
    assert u.optimizer_steps == [1]


def test_each_call_is_a_step_when_asked_or_without_an_optimizer(unit, monkeypatch) -> None:
    model, optimizer = _model_and_optimizer()
    asked = unit(micro_batch=True)
    assert [asked.begins_step() for _ in range(3)] == [True] * 3 and asked.unit == "call"
    del model, optimizer
    monkeypatch.setattr(optimizer_steps, "_has_optimizer", lambda: False)
    none = unit(micro_batch=False)
    assert [none.begins_step() for _ in range(3)] == [True] * 3
    assert (none.unit, none.reason) == ("call", "no optimizer")


def test_a_function_called_without_gradients_is_a_step_per_call(unit) -> None:
    model, optimizer = _model_and_optimizer()  # a training program, but this is its evaluation step
    for context in (torch.no_grad, torch.inference_mode):
        u = unit(micro_batch=False)
        with context():
            begins = [u.begins_step() for _ in range(3)]
        assert begins == [True] * 3 and (u.unit, u.reason) == ("call", "called without gradients")


def test_calls_without_any_optimizer_step_become_steps_after_the_limit(unit, monkeypatch) -> None:
    monkeypatch.setattr(optimizer_steps, "LIMIT", 5)
    model, optimizer = _model_and_optimizer()  # an optimizer exists but the function never steps it
    u = unit(micro_batch=False)
    begins = [u.begins_step() for _ in range(8)]
    assert begins == [True, False, False, False, False, True, True, True]
    assert u.unit == "call" and "5 times without stepping an optimizer" in u.note


def _frame_of_the_step():
    return sys._getframe(0)


def test_the_caller_is_named_by_its_package_or_as_the_workspace() -> None:
    import functools

    @functools.wraps(_frame_of_the_step)
    def wrapped():  # a decorator's frame (functools) is not the caller
        return _frame_of_the_step()

    frame = wrapped()
    caller = describe_caller(frame, in_workspace=lambda path: path == __file__)
    assert caller["function"] == "wrapped" and caller["package"] is None  # this file is the "workspace"
    caller = describe_caller(frame, in_workspace=lambda path: False)
    assert caller["package"] == __name__.split(".")[0]
