"""`stepscope profile --python EXE` with other interpreters than the one running Stepscope.

Stepscope runs in one interpreter; the user's program and the agent run in the one `--python`
names, which may be as old as Python 3.10 with torch 2.1. This test profiles the CPU example once
with each interpreter listed in the environment variable STEPSCOPE_EXTRA_PYTHONS (paths separated
by os.pathsep, each with torch installed), with shapes, memory and stacks on, and checks what a
user reads: the step, the lines, the shapes and memory per line, and the scenario's interpreter.

    STEPSCOPE_EXTRA_PYTHONS=.cache/py310-torch21/bin/python pytest tests/capture/test_other_interpreters.py

`tools/check-old-torch.sh` builds that interpreter (Python 3.10 + torch 2.1.2 from PyPI) and runs
this test among its checks. Without the variable (as in CI) the interpreter running the tests is
named with `--python`, so the option's path through the runner and the agent is still exercised.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import run_stepscope

pytestmark = pytest.mark.torch

EXTRA_PYTHONS = [p for p in os.environ.get("STEPSCOPE_EXTRA_PYTHONS", "").split(os.pathsep) if p.strip()]


@pytest.mark.parametrize("python", EXTRA_PYTHONS or [sys.executable])
def test_profile_with_another_interpreter(workspace: Path, python: str):
    python = str(Path(python).expanduser().absolute())
    versions = subprocess.run([python, "-c", "import platform, torch; print(platform.python_version(), torch.__version__)"],
                              capture_output=True, text=True, timeout=120)
    assert versions.returncode == 0, f"{python} cannot import torch: {versions.stderr[-500:]}"
    python_version, torch_version = versions.stdout.split()

    r = run_stepscope("profile", "train_cpu.py", "--python", python, "--active", "3",
                      "--shapes", "--memory", "--stack", "--json", cwd=workspace)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    machine = report["scenario"]["machine"]
    assert (machine["python"], machine["torch"]) == (python_version, torch_version)

    source = (workspace / "train_cpu.py").read_text().splitlines()
    loop_line = next(i for i, t in enumerate(source, 1) if "for x, y in loader:" in t)
    forward_line = next(i for i, t in enumerate(source, 1) if "logits = model(x)" in t)
    assert len(report["steps"]) == 3 and report["ms_per_step"] > 0
    exact = {e["line"]: e for e in report["lines"] if e["precision"] == "exact"}
    assert max(exact.values(), key=lambda e: e["wall_ms"])["line"] == loop_line  # the slow batch read
    assert exact[forward_line]["backward_ms"] > 0
    linear = [s for s in exact[forward_line]["shapes"] if s["op"] == "aten::linear"]
    # --shapes: the first layer's input (the list is ordered by time, which a loaded machine can swap)
    assert [64, 768] in [s["shapes"][0] for s in linear]
    assert exact[loop_line]["alloc_bytes"] > 0 and exact[loop_line]["peak_bytes"] > 0  # --memory
    assert any(e["precision"] == "function" for e in report["lines"])  # --stack: Python frames
    assert report["scenario"]["torch_compile"]["compiled_step"] is False
