"""A light capture (`--light`): torch's profiler observes only user scopes on the CPU, so the trace
holds the steps and Stepscope's line regions but no operator; each line keeps its figures, what only
operators could say is said as not observed, and the report says what the capture held.
(A real CPU torch run; the profiler's cost with and without it is measured on a GPU by
benchmarks/light_capture_gpu.py.)"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from ..conftest import run_stepscope

pytestmark = pytest.mark.torch

PROGRAM = """\
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(20):
    x = torch.randn(16, 32)
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
"""
LOOP, FORWARD, BACKWARD = 6, 8, 9


def _events(run_dir: Path) -> list[dict]:
    (trace,) = [p for p in run_dir.iterdir() if p.name.startswith("trace")]
    opener = gzip.open if trace.suffix == ".gz" else open
    with opener(trace, "rt") as f:
        return json.load(f)["traceEvents"]


def test_a_light_capture_records_the_lines_and_no_operator(tmp_path: Path):
    (tmp_path / "train.py").write_text(PROGRAM)
    r = run_stepscope("profile", "train.py", "--line", str(LOOP), "--light", "--json", "--warmup", "1", "--active",
                      "3", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["scenario"]["observed"]["capture"] == {"light": True, "asked": "light", "why_not": None}
    events = _events(Path(report["traces"][0]).parent)
    categories = {e.get("cat") for e in events}
    assert "cpu_op" not in categories and "user_annotation" in categories
    lines = {entry["line"]: entry for entry in report["lines"]}
    assert {FORWARD, BACKWARD} <= set(lines) and lines[FORWARD]["wall_ms"] > 0
    # backward by line needs the operators: not observed, never 0
    assert all(entry["backward_ms"] is None for entry in report["lines"])
    assert len(report["steps"]) == 3 and report["unprofiled"]["ms_per_step"] > 0
    assert any(n.startswith("light capture (--light): CPU operators were not recorded") for n in report["notes"])
    text = run_stepscope("analyze", str(Path(report["traces"][0]).parent), cwd=tmp_path)
    assert text.returncode == 0 and "light capture (--light)" in text.stdout
