"""Backward work belongs to the forward line that recorded it: a finding about kernels or an operator
names the forward statement, not `loss.backward()` where the backward ran (synthetic GPU traces,
times in µs; and a real CPU program whose matmuls' backward runs in `loss.backward()`).

The step: a per-sample Python loop in the model's forward (line 20: 40 small matmuls, each recording
an autograd node) and `loss.backward()` (line 21), whose backward ops run on the autograd thread
and launch two kernels each: 80 backward kernels against 40 forward ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stepscope.analysis.report import analyze
from tests.analysis.invariants import violations
from tests.analysis.kineto_synth import Synth, run_folder

from ..conftest import run_stepscope

AUTOGRAD = 200  # the autograd engine's thread


def per_sample_forward(*, flows: bool) -> Synth:
    s = Synth()
    fid = 1
    for k in range(5):
        t = k * 2000
        s.step(k + 1, t, 2000)
        s.region("ss:f0:20", t + 10, 800)
        seqs = []
        for j in range(40):
            at = t + 15 + 19 * j
            seq = 1000 * k + j
            seqs.append((seq, at))
            # with flows the link is the fwdbwd flow; without, the sequence number alone
            s.op("aten::mm", at, 15, seq=None if flows else seq)
            s.launch(at + 3, at + 5, 4)
        s.region("ss:f0:21", t + 820, 1100)
        for j, (seq, fwd_at) in enumerate(reversed(seqs)):
            at = t + 830 + 26 * j
            s.op("MmBackward0", at, 24, tid=AUTOGRAD, seq=None if flows else seq)
            if flows:
                s.flow(fid, fwd_at, at + 1, end_tid=AUTOGRAD)
                fid += 1
            s.launch(at + 2, at + 4, 4, tid=AUTOGRAD)
            s.launch(at + 12, at + 14, 4, tid=AUTOGRAD)
    return s


@pytest.mark.parametrize("flows", [True, False], ids=["fwdbwd flows", "sequence numbers"])
def test_small_launches_names_the_forward_line_whose_backward_launches_most(tmp_path: Path, flows: bool) -> None:
    report = analyze([run_folder(tmp_path, per_sample_forward(flows=flows)) / "trace.json"])
    assert violations(report) == []
    (f,) = [f for f in report["findings"] if f["kind"] == "small-launches"]
    assert f["line"] == 20  # not 21, where the backward ran
    kernels = report["evidence"]["kernels"]
    assert kernels["top_line_kernels"] == 120 and kernels["top_line_backward_kernels"] == 80
    assert "120 kernels per step come from this line (80 of them in the backward its operations recorded)" \
        in f["observation"]
    # the lines table already says the same of time: the backward's is the forward line's backward_ms
    forward = next(x for x in report["lines"] if x["line"] == 20)
    assert forward["backward_ms"] > 0


def one_large_matmul() -> Synth:
    """Line 20 records one matmul (a 100 µs kernel); its backward (line 21, on the autograd thread)
    runs two more inside `MmBackward0` (700 µs of kernels): the operator's time is mostly backward."""
    s = Synth()
    for k in range(5):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.region("ss:f0:20", t + 10, 60)
        s.op("aten::mm", t + 15, 40, seq=k)
        s.launch(t + 20, t + 30, 100)
        s.region("ss:f0:21", t + 100, 850)
        s.op("MmBackward0", t + 140, 60, tid=AUTOGRAD, seq=k)
        for j in range(2):
            s.op("aten::mm", t + 145 + 25 * j, 20, tid=AUTOGRAD)
            s.launch(t + 150 + 25 * j, t + 200 + 350 * j, 350, tid=AUTOGRAD)
    return s


def test_dominant_op_names_the_forward_line_whose_backward_holds_most_of_the_operators_time(tmp_path: Path) -> None:
    report = analyze([run_folder(tmp_path, one_large_matmul()) / "trace.json"])
    assert violations(report) == []
    (f,) = [f for f in report["findings"] if f["kind"] == "dominant-op"]
    assert f["figures"]["op"] == "aten::mm" and f["line"] == 20  # not 21, where the backward ran
    assert f["figures"]["gpu_ms"] == 0.8  # the forward's 100 µs and the backward's 700 µs, per step
    assert f["figures"]["count"] == 3 and "in 3 call(s) per step at train.py:20 (2 of them in the backward it " \
        "records)" in f["observation"]



def accumulating(*, flows: bool) -> Synth:
    """The per-sample forward (line 20: 40 matmuls, a kernel each) whose backward (line 21) evaluates each
    node in the engine's `evaluate_function` wrapper: the node's own op (`MmBackward0`, a kernel), then,
    after it inside the wrapper, the gradient added into the weight's (`aten::add_`, a kernel): the
    accumulations a per-sample loop makes, one per sample."""
    s = Synth()
    fid = 1
    for k in range(5):
        t = k * 2500
        s.step(k + 1, t, 2500)
        s.region("ss:f0:20", t + 10, 780)
        seqs = []
        for j in range(40):
            at = t + 15 + 19 * j
            seq = 1000 * k + j
            seqs.append((seq, at))
            s.op("aten::mm", at, 15, seq=None if flows else seq)
            s.launch(at + 3, at + 5, 4)
        s.region("ss:f0:21", t + 800, 1650)
        for j, (seq, fwd_at) in enumerate(reversed(seqs)):
            at = t + 810 + 40 * j
            s.op("autograd::engine::evaluate_function: MmBackward0", at, 36, tid=AUTOGRAD, seq=None if flows else seq)
            s.op("MmBackward0", at + 1, 14, tid=AUTOGRAD, seq=None if flows else seq)
            if flows:  # the flow ends in the node's own op, inside the wrapper
                s.flow(fid, fwd_at, at + 2, end_tid=AUTOGRAD)
                fid += 1
            s.launch(at + 3, at + 1000, 4, tid=AUTOGRAD)
            s.op("aten::add_", at + 18, 16, tid=AUTOGRAD)
            s.launch(at + 20, at + 1010, 4, tid=AUTOGRAD)
    return s


@pytest.mark.parametrize("flows", [True, False], ids=["fwdbwd flows", "sequence numbers"])
def test_gradients_accumulated_by_the_engine_belong_to_the_forward_line(tmp_path: Path, flows: bool) -> None:
    report = analyze([run_folder(tmp_path, accumulating(flows=flows)) / "trace.json"])
    assert violations(report) == []
    # 40 forward kernels, 40 in the nodes' own ops, 40 accumulations: all the forward statement's
    kernels = report["evidence"]["kernels"]
    assert kernels["top_line_kernels"] == 120 and kernels["top_line_backward_kernels"] == 80
    (add,) = [o for o in report["evidence"]["ops"] if o["name"] == "aten::add_"]
    assert add["line"] == 20 and add["line_count"] == 40 and add["line_backward_count"] == 40
    # the lines table: the wrappers' time is the forward line's backward time (40 x 36 µs), whichever link
    forward = next(x for x in report["lines"] if x["line"] == 20)
    assert forward["backward_ms"] == pytest.approx(1.44, abs=0.001)


# --- a real program on the CPU -----------------------------------------------------------------------

TWO_MATMULS = """\
import torch

torch.manual_seed(0)
torch.set_num_threads(1)

w1 = torch.randn(512, 512, requires_grad=True)
w2 = torch.randn(512, 512, requires_grad=True)
opt = torch.optim.SGD([w1, w2], lr=1e-6)
data = [torch.randn(512, 512) for _ in range(4)]
for i in range(12):
    x = data[i % 4]
    out = torch.relu(x @ w1) @ w2
    loss = out.square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


@pytest.mark.torch
def test_a_cpu_step_of_large_matmuls_names_the_forward_statement_not_loss_backward(tmp_path: Path) -> None:
    # the statement's two matmuls record three more in the backward, which runs inside `loss.backward()`:
    # most of the operator's calls and time happen there, the statement causes them all
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    script = ws / "train.py"
    script.write_text(TWO_MATMULS)
    code = script.read_text().splitlines()
    loop, forward, backward = (code.index(s) + 1 for s in ("for i in range(12):", "    out = torch.relu(x @ w1) @ w2",
                                                            "    loss.backward()"))
    r = run_stepscope("profile", "train.py", "--line", str(loop), "--json", "--wait", "0", "--warmup", "1",
                      "--active", "3", cwd=ws)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout)
    assert violations(report) == []
    (f,) = [f for f in report["findings"] if f["kind"] == "dominant-op"]
    assert f["figures"]["op"] == "aten::mm" and (Path(f["file"]).name, f["line"]) == ("train.py", forward)
    assert f["figures"]["count"] == 5 and "(3 of them in the backward it records)" in f["observation"]
    assert f"train.py:{backward}" not in f["observation"]
    # the lines table says the same of time: the backward is the forward statement's backward_ms
    assert next(x for x in report["lines"] if x["line"] == forward)["backward_ms"] > 0
