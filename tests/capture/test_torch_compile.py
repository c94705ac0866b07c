"""The scenario record says whether the step runs torch.compile'd code (real torch on the CPU).

`scenario.torch_compile.compiled_step` is what a user reads; `evidence` says why. The programs use
the `aot_eager` backend (dynamo + AOTAutograd, no C++ compiler needed) except the inductor test,
which needs one.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ..conftest import run_stepscope

pytestmark = pytest.mark.torch

PROGRAM = """\
import sys
import torch

backend = sys.argv[1]
net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
model = torch.compile(net, backend=backend)
opt = torch.optim.SGD(net.parameters(), lr=0.01)


@torch.compile(backend=backend)
def scaled(x):
    return torch.sin(x) * 2


for i in range(12):
    rows = 8 if i < 5 else 9  # a new batch size in the middle of the active window: a recompile
    loss = model(torch.randn(rows, 16)).sum() + scaled(torch.randn(4)).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
"""


def _profile(ws: Path, name: str, body: str, *args: str) -> dict:
    (ws / name).write_text(textwrap.dedent(body))
    r = run_stepscope("profile", "--json", name, *args, cwd=ws)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["scenario"]


def test_a_compiled_model_and_function_called_in_the_step_are_reported(workspace: Path):
    scenario = _profile(workspace, "compiled.py", PROGRAM, "--", "aot_eager")
    record = scenario["torch_compile"]
    assert record["compiled_step"] is True
    assert scenario["program_state"]["torch_compile_used"] is True
    assert {(o["name"], o["kind"]) for o in record["compiled_objects"]} == {("model", "module"), ("scaled", "function")}
    model = next(m for m in scenario["observed"]["models"] if m["name"] == "model")
    assert model == {**model, "type": "Sequential", "compiled": True}  # named by what it wraps
    assert not next(m for m in scenario["observed"]["models"] if m["name"] == "net")["compiled"]
    # AOTAutograd's compiled function runs once per active step (forward of the compiled model)
    assert record["trace_markers"]["CompiledFunction"] == 5
    assert record["dynamo"]["before_window"]["frames_compiled"] > 0
    # the batch size changed inside the window: dynamo compiled again while it was measured
    assert record["dynamo"]["during_window"]["frames_compiled"] > 0
    assert any("during the window" in e for e in record["evidence"])


def test_a_plain_step_and_a_compiled_model_left_uncalled_are_not_compiled_steps(workspace: Path):
    plain = _profile(workspace, "plain.py", """\
        import torch
        model = torch.nn.Linear(16, 4)
        for i in range(12):
            model(torch.randn(8, 16)).sum().backward()
        """)
    assert plain["torch_compile"]["compiled_step"] is False
    dynamo = plain["torch_compile"]["dynamo"]  # None when nothing in the process loaded torch._dynamo
    assert dynamo is None or (dynamo["before_window"]["frames_compiled"] == dynamo["during_window"]["frames_compiled"] == 0)
    assert plain["torch_compile"]["compiled_objects"] == []
    assert plain["program_state"]["torch_compile_used"] is False

    uncalled = _profile(workspace, "uncalled.py", """\
        import torch
        model = torch.nn.Linear(16, 4)
        fast = torch.compile(model, backend="aot_eager")  # built, never called
        for i in range(12):
            model(torch.randn(8, 16)).sum().backward()
        """)
    record = uncalled["torch_compile"]
    assert record["compiled_step"] is False
    assert [o["name"] for o in record["compiled_objects"]] == ["fast"]
    assert not any(record["trace_markers"].values())
    assert record["evidence"][-1] == "but no compiled code ran in the window"


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="inductor on the CPU needs a C++ compiler")
def test_inductor_compiled_step(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor-cache"))
    record = _profile(workspace, "compiled.py", PROGRAM, "--", "inductor")["torch_compile"]
    assert record["compiled_step"] is True
    assert record["trace_markers"]["CompiledFunction"] == 5


# A model in a workspace module (instrumented by Stepscope) compiled by the step's file, and a
# workspace function the step calls eagerly. The program writes dynamo's counters at its end.
MODEL = """\
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 2 * width)
        self.down = nn.Linear(2 * width, width)

    def forward(self, x):
        h = self.norm(x)
        h = self.up(h)
        h = torch.nn.functional.gelu(h) * torch.sigmoid(h)
        h = self.down(h)
        return x + 0.5 * h


def loss_of(out):
    centred = out - out.mean()
    return centred.pow(2).mean()
"""

TRAIN = """\
import json
import sys

import torch

from model import Block, loss_of

backend, counters_file = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
model = Block(32)
cmodel = torch.compile(model, backend=backend)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(16, 32)
for i in range(10):
    out = cmodel(x)
    loss = loss_of(out)
    loss.backward()
    opt.step()
    opt.zero_grad()
from torch._dynamo.utils import counters
with open(counters_file, "w") as f:
    json.dump({"graphs": counters["stats"]["unique_graphs"], "breaks": dict(counters["graph_break"]),
               "frames": dict(counters["frames"])}, f)
"""
TRAIN_LOOP = 14


def test_compiled_workspace_code_runs_compiled_under_stepscope_with_the_same_graphs(workspace: Path, tmp_path: Path):
    """Stepscope's labels must be invisible to Dynamo: a compiled model defined in a workspace module
    compiles to the same graphs, with no graph break, as it does without Stepscope (before, every
    labelled function broke at its first line and ran eager), and the eager lines keep their regions."""
    (workspace / "model.py").write_text(MODEL)
    (workspace / "train.py").write_text(TRAIN)
    plain_counters, profiled_counters = tmp_path / "plain.json", tmp_path / "profiled.json"
    r = subprocess.run([sys.executable, "train.py", "eager", str(plain_counters)], cwd=workspace,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    r = run_stepscope("profile", "--json", "train.py", "--line", str(TRAIN_LOOP), "--run-to-end", "--",
                      "eager", str(profiled_counters), cwd=workspace)
    assert r.returncode == 0, r.stderr[-2000:]
    plain, profiled = json.loads(plain_counters.read_text()), json.loads(profiled_counters.read_text())
    assert plain["graphs"] == 1 and plain["breaks"] == {}  # the program itself compiles whole
    assert profiled == plain
    report = json.loads(r.stdout)
    assert report["scenario"]["torch_compile"]["compiled_step"] is True
    lines = {(Path(x["file"]).name, x["line"]): x for x in report["lines"]}
    # the eager workspace function keeps its per-line regions, below the step's own lines
    assert lines[("model.py", 21)]["precision"] == lines[("model.py", 22)]["precision"] == "exact"
    assert ("train.py", 15) in lines


def test_compiled_workspace_code_keeps_its_graphs_when_measured(workspace: Path, tmp_path: Path):
    """The timing mode adds step boundaries only (no `with` statement), so a compiled workspace
    function keeps its graphs there too. Its program stops where the loop ends, so the counters are
    written at the end of every step."""
    (workspace / "model.py").write_text(MODEL)
    each_step = TRAIN.replace("    opt.zero_grad()\n", "    opt.zero_grad()\n    dump()\n").replace(
        "for i in range(10):", "from torch._dynamo.utils import counters\n\n\ndef dump():\n"
        "    with open(counters_file, 'w') as f:\n"
        "        json.dump({'graphs': counters['stats']['unique_graphs'], 'breaks': dict(counters['graph_break']),\n"
        "                   'frames': dict(counters['frames'])}, f)\n\n\nfor i in range(10):")
    (workspace / "train.py").write_text(each_step)
    loop = next(n for n, text in enumerate(each_step.splitlines(), 1) if text.startswith("for i in range(10)"))
    plain_counters, measured_counters = tmp_path / "plain.json", tmp_path / "measured.json"
    r = subprocess.run([sys.executable, "train.py", "eager", str(plain_counters)], cwd=workspace,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    r = run_stepscope("measure", "--json", "train.py", "--line", str(loop), "--warmup", "2", "--passes", "6", "--",
                      "eager", str(measured_counters), cwd=workspace)
    assert r.returncode == 0, r.stderr[-2000:]
    plain, measured = json.loads(plain_counters.read_text()), json.loads(measured_counters.read_text())
    assert plain["graphs"] == 1 and plain["breaks"] == {}
    assert measured == plain


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="inductor on the CPU needs a C++ compiler")
def test_inductor_kernels_reach_the_lines_they_came_from(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The whole path on the CPU: the agent records Inductor's provenance (compile.json) and turns on
    its C++ kernels' profiler records, and the report puts each generated kernel on its statements."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor-cache"))
    data = Path(__file__).resolve().parents[1] / "data" / "compiled" / "cpu_mlp" / "ws"
    for name in ("model.py", "train.py"):
        shutil.copy(data / name, workspace / name)
    r = run_stepscope("profile", "--json", "train.py", "--line", "11", "--active", "2", cwd=workspace)
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(r.stdout)
    run = Path(report["traces"][0]).parent
    records = json.loads((run / "compile.json").read_text())
    assert records["enabled"] == {"provenance": "on for this run", "cpp_kernel_profile": "on for this run"}
    assert len(records["graphs"]) == 2 and all(g["key"] for g in records["graphs"])  # forward and backward
    lines = {(Path(x["file"]).name, x["line"]): x for x in report["lines"]}
    assert lines[("model.py", 18)]["precision"] == "compiled"
    assert [f["line"] for f in lines[("model.py", 18)]["compiled"]["fused_with"]] == [16, 17]
    summary = report["compiled_code"]
    assert summary["kernel_calls_per_step"] > 0
    assert summary["kernel_calls_attributed_per_step"] == summary["kernel_calls_per_step"]



ENVIRONMENT = """\
import json, os, sys
import torch

f = torch.compile(lambda x: x * 2, backend="eager")
for i in range(6):
    f(torch.randn(3 + (i == 4)))  # a new size in the window: a recompilation
json.dump({k: os.environ.get(k) for k in ("INDUCTOR_PROVENANCE", "TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE")},
          open(sys.argv[1], "w"))
"""


def test_compile_records_are_taken_only_for_stepscope_runs_and_only_when_asked(workspace: Path, tmp_path: Path):
    (workspace / "env.py").write_text(ENVIRONMENT)
    seen = tmp_path / "env.json"
    schedule = ("--line", "5", "--wait", "1", "--warmup", "1", "--active", "3", "--run-to-end")
    r = run_stepscope("profile", "--json", "env.py", *schedule, "--", str(seen), cwd=workspace)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(seen.read_text()) == {"INDUCTOR_PROVENANCE": "1", "TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE": "1"}
    report = json.loads(r.stdout)
    assert (Path(report["traces"][0]).parent / "compile.json").is_file()
    (recompiled,) = report["compiled_code"]["compilations"]
    assert recompiled["step"] == 4 and recompiled["recompile"] and recompiled["line"] == 4
    assert [f["line"] for f in report["findings"] if f["kind"] == "recompilation"] == [4]

    r = run_stepscope("profile", "--json", "env.py", *schedule, "--no-compile-records", "--", str(seen), cwd=workspace)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(seen.read_text()) == {"INDUCTOR_PROVENANCE": None, "TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE": None}
    report = json.loads(r.stdout)
    assert not (Path(report["traces"][0]).parent / "compile.json").exists()
    assert report.get("compiled_code") is None
    # a plain run of the program never has them
    subprocess.run([sys.executable, "env.py", str(seen)], cwd=workspace, check=True, timeout=300)
    assert json.loads(seen.read_text()) == {"INDUCTOR_PROVENANCE": None, "TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE": None}
