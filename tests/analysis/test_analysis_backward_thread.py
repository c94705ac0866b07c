"""1.9-era traces (`Call stack` lines, no `External id`): GPU work launched from the autograd thread.

Layout of each 1 ms step (µs from the step start), two steps; lines of train.py:
  main thread     46 `outputs = model(inputs)`: aten::addmm [100, 300] (sequence number 10 + step),
                     launches a kernel at 150 that runs [160, 260]
                  49 `optimizer.zero_grad()`: aten::zero_ [320, 340]; ops record the number the next
                     autograd node will take, so it carries the NEXT step's forward number (11 + step)
                  50 `loss.backward()`: aten::ones_like [350, 360], then the thread records nothing while
                     it waits for the autograd thread
                  51 `optimizer.step()`: aten::add_ [700, 750], launches a kernel at 710 that runs [720, 740]
  autograd thread AddmmBackward [400, 500] (number 10 + step) launches at 420 a kernel running [430, 530];
                  torch::autograd::AccumulateGrad [520, 560] (no number) launches at 530 one running [540, 570]
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .kineto_synth import Synth19, call_stack_1_9
from stepscope.analysis.report import analyze

AUTOGRAD = 200
statement = call_stack_1_9


def build() -> Synth19:
    s = Synth19()
    for k in range(2):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.op("aten::addmm", t + 100, 200, seq=10 + k, stack=statement(46))
        s.launch(t + 150, t + 160, 100)
        s.op("aten::zero_", t + 320, 20, seq=11 + k, stack=statement(49, "optim/optimizer.py(217): zero_grad"))
        s.op("aten::ones_like", t + 350, 10, stack=statement(50, "autograd/__init__.py(147): backward"))
        s.op("AddmmBackward", t + 400, 100, tid=AUTOGRAD, seq=10 + k)
        s.launch(t + 420, t + 430, 100, tid=AUTOGRAD)
        s.op("torch::autograd::AccumulateGrad", t + 520, 40, tid=AUTOGRAD)
        s.launch(t + 530, t + 540, 30, tid=AUTOGRAD)
        s.op("aten::add_", t + 700, 50, stack=statement(51, "optim/sgd.py(110): step"))
        s.launch(t + 710, t + 720, 20)
    return s


def analysed(tmp_path: Path, synth: Synth19) -> dict:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "train.py").write_text("\n" * 60)
    report = analyze([synth.write(tmp_path / "trace.json")], source_root=ws)
    report["by_line"] = {r["line"]: r for r in report["lines"]}
    return report


def test_kernels_from_the_autograd_thread_land_on_the_backward_statement(tmp_path: Path) -> None:
    report = analysed(tmp_path, build())
    lines = report["by_line"]
    assert report["attribution"]["gpu_unlinked"] == 0
    # the backward kernel [430, 530] and the gradient accumulation's [540, 570]: 0.13 ms per step
    assert lines[50]["gpu_ms"] == pytest.approx(0.13) and lines[50]["kernels"] == 2
    assert lines[50]["wall_ms"] == pytest.approx(0.01)  # its own op; the waiting is not recorded
    assert lines[46]["gpu_ms"] == pytest.approx(0.1) and lines[51]["gpu_ms"] == pytest.approx(0.02)
    # every GPU moment of the step is on some line
    assert sum(r["gpu_ms"] for r in report["lines"]) == pytest.approx(report["window"]["gpu_ms"])


def test_backward_work_reaches_the_forward_statement_by_sequence_number(tmp_path: Path) -> None:
    lines = analysed(tmp_path, build())["by_line"]
    assert lines[46]["backward_ms"] == pytest.approx(0.1)  # AddmmBackward's CPU time
    assert lines[46]["backward_gpu_ms"] == pytest.approx(0.1)  # the kernel launched inside it
    # zero_grad holds step 2's forward number first, but runs before that node exists: no backward there
    assert lines[49]["backward_ms"] == 0.0 and lines[49]["backward_gpu_ms"] == 0.0


def test_a_launch_before_the_steps_first_statement_stays_off_the_previous_steps_lines(tmp_path: Path) -> None:
    s = build()
    s.launch(1010, 1020, 50, tid=AUTOGRAD)  # step 2, before its main thread ran anything
    report = analysed(tmp_path, s)
    lines = report["by_line"]
    # neither the statement step 1 ran last (51) nor its backward statement (50) takes it
    assert lines[51]["gpu_ms"] == pytest.approx(0.02) and lines[50]["gpu_ms"] == pytest.approx(0.13)
    assert sum(r["gpu_ms"] for r in report["lines"]) == pytest.approx(report["window"]["gpu_ms"] - 0.025)
