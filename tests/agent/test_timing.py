"""Timing steps and keeping their values without adding a synchronisation (real torch, CPU)."""

from __future__ import annotations

import time

import pytest

torch = pytest.importorskip("torch")

from stepscope.agent.timing import HOST_CLOCK, BadValueExpression, StepTimer, ValueProbe, clock_words  # noqa: E402

pytestmark = pytest.mark.torch


def test_each_interval_between_boundaries_is_one_step_on_the_host_clock():
    timer = StepTimer()
    for pause in (0.02, 0.0, 0.03):
        timer.mark()
        time.sleep(pause)
    timer.mark()
    durations, clocks = timer.durations()
    assert len(durations) == 3 and clocks == ["host"] * 3
    assert durations[0] >= 20.0 and durations[2] >= 30.0  # what ran inside the step is inside its time
    assert durations[1] < durations[0]
    assert clock_words(clocks) == HOST_CLOCK


def test_a_cpu_program_never_gets_cuda_initialised_by_the_timer():
    timer = StepTimer()
    timer.mark()
    timer.mark()
    timer.durations()
    assert not torch.cuda.is_initialized()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (the GPU benchmark checks this path)")
def test_cuda_events_time_the_device_work_of_each_step():
    x = torch.randn(2048, 2048, device="cuda")
    timer = StepTimer()
    for n in (1, 8):
        timer.mark()
        for _ in range(n):
            x = x @ x
            x = x / x.norm()
    timer.mark()
    durations, clocks = timer.durations()
    assert clocks == ["cuda", "cuda"]
    assert durations[1] > 4 * durations[0]


def test_the_loss_is_kept_as_a_tensor_and_read_after_the_passes():
    w = torch.ones(3, requires_grad=True)
    probe = ValueProbe(None)
    losses = []
    for i in range(3):
        loss = (w * (i + 1)).sum()
        losses.append(loss)
        probe.capture(type("F", (), {"f_globals": {}, "f_locals": {"loss": loss}})())
    kept = probe._kept[0][0]
    assert kept.grad_fn is None  # detached: the step's graph is not kept alive
    assert probe.values() == [3.0, 6.0, 9.0]


def test_a_step_without_a_loss_has_no_values_rather_than_zeros():
    probe = ValueProbe(None)
    probe.capture(type("F", (), {"f_globals": {}, "f_locals": {"x": 1}})())
    assert probe.values() is None


def test_a_value_changed_in_place_after_its_pass_reads_as_unknown():
    total = torch.zeros(())
    probe = ValueProbe("total")
    frame = type("F", (), {"f_globals": {}, "f_locals": {"total": total}})()
    total += 1
    probe.capture(frame)
    total += 1  # the program accumulates into the same tensor
    probe.capture(frame)
    assert probe.values() == [None, 2.0]


def test_a_value_expression_the_frame_cannot_evaluate_is_a_clear_error():
    probe = ValueProbe("accuracy * 100")
    with pytest.raises(BadValueExpression, match="--value 'accuracy \\* 100': a name is not defined"):
        probe.capture(type("F", (), {"f_globals": {}, "f_locals": {}})())
    probe = ValueProbe("out.mean()")
    with pytest.raises(BadValueExpression, match="AttributeError"):
        probe.capture(type("F", (), {"f_globals": {}, "f_locals": {"out": [1, 2]}})())


def test_a_value_of_several_elements_reads_as_their_sum_and_numbers_pass_through():
    probe = ValueProbe("v")
    for v in (torch.tensor([1.0, 2.0, 3.0]), 2.5, "text"):
        probe.capture(type("F", (), {"f_globals": {}, "f_locals": {"v": v}})())
    assert probe.values() == [6.0, 2.5, None]


def _frame(**names):
    return type("F", (), {"f_globals": {}, "f_locals": names})()


def test_a_step_functions_value_is_what_its_calls_returned_read_as_a_loss():
    from collections import OrderedDict

    class Output(OrderedDict):  # an HF ModelOutput is a dict whose `loss` is also an attribute
        pass

    class Result:
        def __init__(self, loss):
            self.loss = loss

    w = torch.ones(2, requires_grad=True)
    probe = ValueProbe(None, function_step=True)
    returned = [(w * 2).sum(), {"loss": torch.tensor(3.0), "log": {"acc": 0.5}}, (torch.tensor(4.0), "logits"),
                Output(loss=torch.tensor(5.0)), Result(6.0), torch.ones(8, 10), None]
    for value in returned:
        probe.add(probe.read(_frame(), value))
    probe.add(None)  # a pass whose call never returned before the next began
    assert probe._kept[0][0].grad_fn is None  # detached
    # a batch of outputs is no loss, and is not kept for every pass
    assert probe.values() == [4.0, 3.0, 4.0, 5.0, 6.0, None, None, None]
    assert probe.expression == "return"


def test_a_step_function_that_returns_nothing_falls_back_to_its_loss():
    probe = ValueProbe(None, function_step=True)
    for i in range(3):
        probe.add(probe.read(_frame(loss=torch.tensor(float(i))), None))
    assert probe.values() == [0.0, 1.0, 2.0] and probe.expression == "loss"
    nothing = ValueProbe(None, function_step=True)
    nothing.add(nothing.read(_frame(x=1), "not a number"))
    assert nothing.values() is None and nothing.expression == "return"


def test_a_value_expression_of_a_step_function_reads_its_frame_and_what_it_returned():
    probe = ValueProbe('return["acc"] * 100 + bias', function_step=True)
    probe.add(probe.read(_frame(bias=1.0), {"loss": torch.tensor(9.0), "acc": 0.25}))
    assert probe.values() == [26.0]
    with pytest.raises(BadValueExpression, match="a name is not defined in the step function's frame as it returns"):
        ValueProbe("acc", function_step=True).read(_frame(), 1.0)
