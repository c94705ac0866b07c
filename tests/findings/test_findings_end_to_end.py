"""End to end on the CPU: `stepscope profile` runs a scenario for real, and the finding lands on its line.

Also real traces Stepscope did not record: the public TensorBoard-plugin ResNet-50 samples
(num_workers=0 vs 4) from shared/traces/public, when that corpus is present.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stepscope.analysis.report import analyze
from tests import corpus

from .conftest import kinds, line_of
from .scenario_data import REPO

# shared/ lies beside the project root (the team's checkout and CI); a user's clone has none
CORPUS = corpus.PUBLIC / "kineto" / "tb_plugin_samples"


@pytest.mark.torch
def test_profiling_the_input_bound_scenario_reports_input_bound_on_the_loop_header(tmp_path: Path) -> None:
    # a copy in a folder of its own: the run's history goes there, not into this repository
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = workspace / "input_bound.py"
    shutil.copy(REPO / "examples" / "scenarios" / "input_bound.py", script)
    loop = line_of("input_bound.py", "in loader:")
    done = subprocess.run(
        [sys.executable, "-m", "stepscope", "profile", str(script), "--line", str(loop), "--out", str(tmp_path / "run"),
         "--json", "--timeout", "120"],
        capture_output=True, text=True, cwd=workspace, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    (f,) = [f for f in report["findings"] if f["kind"] == "input-bound"]
    assert (f["file"], f["line"]) == (str(script), loop)
    # four samples wait 3 ms each on "storage": the read is at least 12 ms of every step
    assert f["figures"]["read_ms"] >= 12.0
    assert "repeated-copy" not in kinds(report) and "gpu-not-observed" not in kinds(report)
    assert report["missing_labels"] == []
    # the run folder analyses again to the same findings
    assert kinds(analyze([tmp_path / "run"])) == kinds(report)


@corpus.needs_public
def test_a_public_trace_with_a_main_process_dataloader_is_input_bound_and_with_workers_it_is_not() -> None:
    (zero,) = (CORPUS / "resnet50_num_workers_0").glob("*.json.gz")
    (four,) = (CORPUS / "resnet50_num_workers_4").glob("*.json.gz")
    slow, fast = analyze([zero]), analyze([four])
    f = next(f for f in slow["findings"] if f["kind"] == "input-bound")
    assert "_SingleProcessDataLoaderIter" in f["observation"] and "Tesla V100" in f["observation"]
    assert "No source line could be named" in f["observation"]
    assert "input-bound" not in kinds(fast)
    # data batches moving to the device every step are not repeated copies
    assert "repeated-copy" not in kinds(slow) and "repeated-copy" not in kinds(fast)
