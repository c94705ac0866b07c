"""What the step contains, read from real captures (the committed scenario traces)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.analysis.report import analyze
from stepscope.analysis.step_contents import describe_step

from ..findings.scenario_data import DATA, load_run


@pytest.fixture
def report_of(tmp_path: Path):
    def load(name: str) -> dict:
        if not (DATA / name).is_dir():
            pytest.fail(f"missing committed scenario trace {name}")
        return analyze([load_run(name, tmp_path)])
    return load


def test_cpu_training_step_with_a_dataloader(report_of):
    contents = report_of("input_bound")["step_contents"]
    assert contents["batch_read"] and contents["forward"] and contents["backward"] and contents["optimizer_step"]
    assert contents["transfer"] is False  # nothing moves to a device on a CPU
    assert contents["kind"] == "training"


def test_gpu_step_that_copies_to_the_device(report_of):
    contents = report_of("gpu_repeated_copy")["step_contents"]
    assert contents["transfer"] is True and contents["kind"] == "training"


def test_step_on_prepared_batches_has_no_batch_read(report_of):
    contents = report_of("gpu_clean_mlp")["step_contents"]
    assert contents["batch_read"] is False and contents["transfer"] is False
    assert contents["summary"] == "forward, backward, optimizer step"


def test_summary_of_an_inference_step():
    report = {"lines": [{"file": "a.py", "line": 3, "backward_ms": None, "copies": {}}],
              "regions": [{"label": "ss:f0:3"}],
              "evidence": {"ops": [{"name": "aten::addmm", "self_ms": 1.0, "file": "a.py", "line": 3}]}}
    contents = describe_step(report)
    assert contents == {"replays_graph": False, "batch_read": False, "transfer": False, "forward": True, "backward": False,
                        "optimizer_step": False, "kind": "inference", "summary": "forward"}
