"""`host-bound`: the host's own work keeps the GPU idle, outside the batch read — on small synthetic
GPU traces whose figures can be checked by hand, and on real CPU programs profiled by Stepscope.

Synthetic steps are 1000 µs (tests/analysis/kineto_synth.py): the GPU's work is a few kernels, the
rest of the step is what each case puts on the host. A GPU trace is never made on the CPU: what a
GPU's idle time is can only come from GPU events.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import orjson
import pytest

from stepscope.analysis.report import analyze
from tests.analysis.invariants import violations
from tests.analysis.kineto_synth import Synth, run_folder

from ..conftest import run_stepscope
from .conftest import kinds

SCENARIO = {"step": {"file": None, "line": 12, "function": None, "kind": "loop"}}


def _scenario(tmp_path: Path) -> dict:
    return {**SCENARIO, "step": {**SCENARIO["step"], "file": str(tmp_path / "ws" / "train.py")},
            "program": {"cwd": str(tmp_path / "ws"), "entry": {"kind": "script", "path": str(tmp_path / "ws" / "train.py")}}}


def analyzed(tmp_path: Path, s: Synth, *, unprofiled_ms: list[float] | None = None) -> dict:
    run = run_folder(tmp_path, s, scenario=_scenario(tmp_path))
    if unprofiled_ms is not None:  # the steps the agent timed after the window, without the profiler
        (run / "timings.json").write_bytes(orjson.dumps({"warmup_ms": [], "raw_ms": unprofiled_ms, "clock": "host"}))
    report = analyze([run / "trace.json"])
    assert violations(report) == []
    return report


def only(report: dict, kind: str) -> dict:
    (f,) = [f for f in report["findings"] if f["kind"] == kind]
    return f


def model_work(s: Synth, t: float, seq: int) -> None:
    """The model's forward at line 15 (two ops that record autograd nodes, two 60 µs kernels) and its
    backward at line 16 (the same sequence numbers, two kernels): 240 µs of GPU work from 780 µs on."""
    s.region("ss:f0:15", t + 780, 90)
    for j in range(2):
        s.op("aten::linear", t + 785 + 40 * j, 35, seq=seq + j)
        s.launch(t + 790 + 40 * j, t + 800 + 60 * j, 60)
    s.region("ss:f0:16", t + 880, 100)
    for j in range(2):
        s.op("MmBackward0", t + 885 + 45 * j, 40, seq=seq + 1 - j)
        s.launch(t + 890 + 45 * j, t + 925 + 60 * j, 60)


def augmenting(*, per_sample_launches: bool = False, waits: bool = False) -> Synth:
    """Each step: the batch read (line 12), `x = augment(x)` (line 13) whose loop (line 6) runs line 7
    four times for 150 µs of CPU work each (or, `per_sample_launches`, a kernel every 15 µs: launch
    work), the upload (line 14), then the model (lines 15-16). The GPU idles from the step's start
    to 800 µs."""
    s = Synth()
    for k in range(5):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.region("ss:f0:12:next", t + 5, 20)
        s.region("ss:f0:13", t + 40, 700)
        s.region("ss:f0:6", t + 45, 680)
        for j in range(4):
            at = t + 50 + 165 * j
            s.region("ss:f0:7", at, 150)
            if waits:  # the host waits on the device instead of working
                s.sync(at + 2, 146)
            elif per_sample_launches:
                for m in range(9):
                    s.launch(at + 2 + 15 * m, at + 5 + 15 * m, 2)
            else:
                s.op("aten::flip", at + 5, 140)
        s.region("ss:f0:14", t + 750, 20)
        s.launch(t + 752, t + 760, 10, kind="gpu_memcpy", nbytes=4096)
        model_work(s, t, seq=10 * k + 1)
    return s


def test_per_sample_host_work_before_the_upload_is_host_bound_on_the_loop_that_holds_it(tmp_path: Path) -> None:
    report = analyzed(tmp_path, augmenting())
    f = only(report, "host-bound")
    # the helper's loop holds the work as one unit: its statement repeats inside it
    assert (Path(f["file"]).name, f["line"]) == ("train.py", 6)
    work = report["evidence"]["host_work"]
    assert [w["line"] for w in work["within"]] == [13, 6]
    assert work["lines"][0]["line"] == 7 and work["lines"][0]["ms"] == pytest.approx(0.6, abs=0.01)
    # 4 x 150 µs on line 7 and the loop's and the call's own moments: 0.7 ms of the 1 ms step, while the
    # GPU (0.25 ms busy) idles; the upload (line 14) issues a copy in its 20 µs: launch work
    assert f["figures"]["host_ms"] == pytest.approx(0.7, abs=0.01) and f["figures"]["gpu_idle_ms"] == pytest.approx(0.76, abs=0.002)
    assert work["launch_ms"] == pytest.approx(0.002, abs=0.001)
    assert "The GPU is idle 0.76 ms of the 1.01 ms mean step, and for 0.70 ms of it (69%" in f["observation"]
    assert "inside train.py:6, reached through train.py:13" in f["observation"]
    assert "DataLoader's worker processes" in f["next_check"] and "outputs are unchanged" in f["next_check"]
    # the model's lines record autograd nodes and launch its work: never counted as host work
    assert {w["line"] for w in work["lines"]}.isdisjoint({15, 16})
    assert "small-launches" not in kinds(report) and "sync-in-step" not in kinds(report)


def test_host_time_that_launches_gpu_work_is_launch_overhead_not_host_bound(tmp_path: Path) -> None:
    report = analyzed(tmp_path, augmenting(per_sample_launches=True))
    work = report["evidence"]["host_work"]
    assert "host-bound" not in kinds(report)
    assert work["launch_ms"] > 0.5 and work["ms"] < 0.1  # line 7 issues a kernel every 15 µs


def test_host_time_spent_waiting_on_the_device_is_sync_in_step_not_host_bound(tmp_path: Path) -> None:
    report = analyzed(tmp_path, augmenting(waits=True))
    assert "host-bound" not in kinds(report) and "sync-in-step" in kinds(report)
    assert report["evidence"]["host_work"]["ms"] < 0.15


def test_a_step_whose_gpu_is_busy_without_the_profiler_is_not_called_host_bound(tmp_path: Path) -> None:
    # the profiler slowed the host: without it the step takes 0.3 ms, 0.26 ms of which the GPU works
    report = analyzed(tmp_path, augmenting(), unprofiled_ms=[0.3] * 5)
    assert "host-bound" not in kinds(report)
    # the same step at 2 ms without the profiler: the GPU idles 87% of the real step, and the finding says so
    slow = analyzed(tmp_path / "slow", augmenting(), unprofiled_ms=[2.0] * 5)
    f = only(slow, "host-bound")
    assert f["figures"]["real_step_ms"] == 2.0 and f["figures"]["real_gpu_idle_ms"] == 2.0 - slow["window"]["gpu_ms"]
    assert "the step takes 2.00 ms and the GPU's work 0.25 ms of it: the GPU is idle 88% of the real step too" \
        in f["observation"]


def spread_in_a_block() -> Synth:
    """`with torch.no_grad():` (line 20) around three statements (21-23) of 200, 250 and 220 µs of
    CPU work: a wrapper of spread work, then the model."""
    s = Synth()
    for k in range(5):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.region("ss:f0:20", t + 20, 700)
        for line, (at, dur) in zip((21, 22, 23), ((25, 200), (230, 250), (485, 220))):
            s.region(f"ss:f0:{line}", t + at, dur)
            s.op("aten::add", t + at + 2, dur - 4)
        model_work(s, t, seq=10 * k + 1)
    return s


def test_a_wrapper_around_spread_work_is_looked_through_to_its_largest_statement(tmp_path: Path) -> None:
    f = only(analyzed(tmp_path, spread_in_a_block()), "host-bound")
    assert f["line"] == 22  # not the `with` line that wraps the three
    # (the GPU still runs the previous step's last kernel while line 21 begins: that part is not idle)
    assert "inside train.py:22, reached through train.py:20; the lines that run it, per step: train.py:22 " \
        "(0.25 ms), train.py:23 (0.22 ms), train.py:21 (0.18 ms)" in f["observation"]


def lightning_like() -> Synth:
    """Lightning's shape: `Optimizer.step#AdamW.step` wraps the closure — `training_step` (its def line
    30, an ss region) with a host-side statement (31: 740 µs of CPU work) and the forward (15),
    then the backward (16) — and the update itself (900-980 µs)."""
    s = Synth()
    for k in range(5):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.region("Optimizer.step#AdamW.step", t + 10, 985)
        s.region("ss:f0:30", t + 20, 850)
        s.region("ss:f0:31", t + 30, 745)
        s.op("aten::mul", t + 35, 735)
        model_work(s, t, seq=10 * k + 1)
        s.op("aten::_foreach_add_", t + 905, 70)
        s.launch(t + 910, t + 985, 10)
    return s


def test_a_step_inside_an_optimizers_step_keeps_its_own_lines_host_work(tmp_path: Path) -> None:
    report = analyzed(tmp_path, lightning_like())
    f = only(report, "host-bound")
    # the training_step's statement, looked through the optimizer's region and the step function's def line
    # (less the moments the GPU still runs the previous step's update)
    assert f["line"] == 31 and f["figures"]["lines"][0]["line"] == 31
    assert f["figures"]["lines"][0]["ms"] == pytest.approx(0.73, abs=0.01)
    assert [w["line"] for w in report["evidence"]["host_work"]["within"]] == [30, 31]
    assert "Optimizer.step" not in f["observation"]


# --- real programs on the CPU ---------------------------------------------------------------------

FAST = ("--wait", "0", "--warmup", "1", "--active", "3")
AUGMENT = """\
    import random

    import torch
    from torch import nn

    torch.manual_seed(0)
    torch.set_num_threads(1)
    random.seed(0)


    def augment(images):
        out = []
        for img in images:
            if random.random() < 0.5:
                img = img.flip(-1)
            img = img + 0.01 * torch.randn_like(img)
            out.append((img - img.mean()) / (img.std() + 1e-5))
        return torch.stack(out)


    model = nn.Linear(3 * 8 * 8, 10)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = [(torch.randn(64, 3, 8, 8), torch.randint(0, 10, (64,))) for _ in range(4)]
    for i in range(12):
        x, y = data[i % 4]
        x = augment(x)
        loss = nn.functional.cross_entropy(model(x.flatten(1)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    """


PER_SAMPLE_MODEL = AUGMENT.replace("x = augment(x)", "x = x").replace("model = nn.Linear(3 * 8 * 8, 10)", """\
class PerSample(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(3 * 8 * 8, 10) * 0.01)

        def forward(self, x):
            return torch.stack([row @ self.w for row in x])


    model = PerSample()""")


def _profile(ws: Path, text: str) -> tuple[dict, Path]:
    script = ws / "train.py"
    script.write_text(textwrap.dedent(text))
    line = next(i for i, s in enumerate(script.read_text().splitlines(), 1) if s.startswith("for i in range"))
    r = run_stepscope("profile", "train.py", "--line", str(line), "--json", *FAST, cwd=ws)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout)
    assert violations(report) == []
    return report, script


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    return root


@pytest.mark.torch
def test_per_sample_augmentation_in_a_cpu_training_step_is_named_at_its_loop(ws: Path) -> None:
    report, script = _profile(ws, AUGMENT)
    f = only(report, "host-bound")
    loop = next(i for i, s in enumerate(script.read_text().splitlines(), 1) if "for img in images" in s)
    assert (Path(f["file"]).name, f["line"]) == ("train.py", loop)
    # a CPU trace says nothing of a GPU's idle time
    assert "No GPU ran in this step" in f["observation"] and "GPU is idle" not in f["observation"]
    assert f["figures"]["gpu_idle_ms"] is None
    work = report["evidence"]["host_work"]
    forward = next(i for i, s in enumerate(script.read_text().splitlines(), 1) if "cross_entropy" in s)
    assert forward not in {w["line"] for w in work["lines"]}  # the model's forward records autograd nodes
    # without the augmentation, and with a Python loop over the samples in the model's forward instead:
    # that loop records the model's autograd graph, so it is the model's work, not host work
    clean, script = _profile(ws, PER_SAMPLE_MODEL)
    forward = next(i for i, s in enumerate(script.read_text().splitlines(), 1) if "for row in x" in s)
    assert any(x["line"] == forward and x["backward_ms"] > 0 for x in clean["lines"])
    assert forward not in {w["line"] for w in clean["evidence"]["host_work"]["lines"]}
    assert "host-bound" not in kinds(clean)
