"""Regression: which findings fire on each committed scenario trace, on the CPU and on the H200.

The traces are real captures of examples/scenarios/*.py by `stepscope profile` (CPU: this
workstation, torch 2.13 CPU; GPU: the lent NVIDIA H200, torch 2.11.0+cu130, driver 580.159.04),
frozen by tests/findings/scenario_data.py. Each scenario must fire exactly its planted finding;
the clean controls, which do their start-up before the loop, fire nothing on either machine. Every
other GPU scenario also shows start-up cost: its first step holds the CUDA libraries' first use
(hundreds of ms against a few ms per step).
"""

from __future__ import annotations

import re

import pytest

from .conftest import kinds, line_of
from .scenario_data import REPO

SCRIPTS = REPO / "examples" / "scenarios"

# what fires, in the order findings are listed
CPU = {
    "input_bound": ["input-bound"],
    "repeated_copy": [],  # no host-to-device copy exists on a CPU
    "small_launches": [],  # no kernels exist on a CPU
    "dominant_op": ["dominant-op"],
    "sync_in_step": [],  # a CPU never waits for a device
    "startup_cost": ["startup-cost"],
    "unsteady_window": ["unsteady-window"],
    "missing_label": ["missing-label"],
    "gpu_not_observed": [],  # a CPU program on a CPU machine: no GPU work was expected
    "clean_mlp": [],
    "clean_conv": [],
    "plain_profiler": ["input-bound"],
}
GPU = {
    "input_bound": ["input-bound", "startup-cost"],
    # the batch's own upload from pageable memory holds the host 5% of the step: a wait, said apart
    "repeated_copy": ["repeated-copy", "sync-in-step", "startup-cost"],
    "small_launches": ["small-launches", "startup-cost"],
    "dominant_op": ["dominant-op", "startup-cost"],
    "sync_in_step": ["sync-in-step", "startup-cost"],
    "startup_cost": ["startup-cost"],
    "unsteady_window": ["unsteady-window", "startup-cost"],
    "missing_label": ["startup-cost", "missing-label"],
    "gpu_not_observed": ["gpu-not-observed", "startup-cost"],
    "clean_mlp": [],
    "clean_conv": [],
    # recorded with torch.profiler directly: DataLoader wait, the arange copy and the `.item()` read-back
    # every step, on frame lines
    "plain_profiler": ["input-bound", "repeated-copy", "sync-in-step"],
}
SPEED_UP = re.compile(r"faster|speed-?up|\bsaves?\b|\bgain", re.IGNORECASE)


@pytest.mark.parametrize("name", sorted(CPU))
def test_cpu_scenario_fires_exactly_its_findings(scenario_report, name: str) -> None:
    assert kinds(scenario_report(name)) == CPU[name]


@pytest.mark.parametrize("name", sorted(GPU))
def test_gpu_scenario_fires_exactly_its_findings(scenario_report, name: str) -> None:
    report = scenario_report(f"gpu_{name}")
    assert report["machine"]["device"] == "NVIDIA H200"
    assert kinds(report) == GPU[name]


# the scenarios with findings: the others are checked to have none above
WITH_FINDINGS = sorted([("", name) for name, found in CPU.items() if found]
                       + [("gpu_", name) for name, found in GPU.items() if found])


@pytest.mark.parametrize("prefix, name", WITH_FINDINGS)
def test_every_finding_states_figures_and_a_next_check_without_claiming_a_speed_up(scenario_report, name: str,
                                                                                   prefix: str) -> None:
    findings = scenario_report(prefix + name)["findings"]
    assert len(findings) == len((GPU if prefix else CPU)[name])
    for f in findings:
        assert {"kind", "file", "line", "observation", "hypothesis", "next_check", "severity", "figures"} <= set(f)
        assert re.search(r"\d", f["observation"]), f  # figures, not adjectives
        assert f["next_check"] and f["hypothesis"]
        for text in (f["observation"], f["hypothesis"], f["next_check"]):
            assert not SPEED_UP.search(text), text


def test_the_input_bound_finding_is_on_the_loop_header_and_says_the_gpu_idles(scenario_report) -> None:
    (f,) = [f for f in scenario_report("gpu_input_bound")["findings"] if f["kind"] == "input-bound"]
    assert f["file"] == str(SCRIPTS / "input_bound.py") and f["line"] == line_of("input_bound.py", "in loader:")
    assert "GPU is idle" in f["observation"] and "NVIDIA H200" in f["observation"]
    assert f["figures"]["gpu_idle_during_read_ms"] > 10.0  # 4 samples × 3 ms of storage wait
    assert "prepared in advance" in f["next_check"]


def test_the_cpu_input_bound_finding_says_how_much_of_the_step_the_read_holds(scenario_report) -> None:
    (f,) = scenario_report("input_bound")["findings"]
    assert f["line"] == line_of("input_bound.py", "in loader:")
    assert f["figures"]["read_ms"] / f["figures"]["step_ms"] > 0.8
    assert "GPU" not in f["observation"]  # a CPU program: nothing to say about a GPU


def test_the_repeated_copy_is_the_arange_line_not_the_batch(scenario_report) -> None:
    report = scenario_report("gpu_repeated_copy")
    (f,) = [f for f in report["findings"] if f["kind"] == "repeated-copy"]
    assert f["line"] == line_of("repeated_copy.py", "torch.arange")
    assert {k: f["figures"][k] for k in ("bytes", "per_step", "steps", "factory")} == \
        {"bytes": 256 * 4, "per_step": 1, "steps": 5, "factory": "aten::arange"}
    # the batch moves every step too, with the same size, but no factory built it
    batch = [g for g in report["evidence"]["h2d_copies"] if g["line"] == line_of("repeated_copy.py", "x.to(device)")]
    assert batch and batch[0]["bytes"] == 8 * 256 * 64 * 4 and batch[0]["factory"] is None


def test_small_launches_shows_the_count_and_median_kernel_time_on_the_update_line(scenario_report) -> None:
    (f,) = [f for f in scenario_report("gpu_small_launches")["findings"] if f["kind"] == "small-launches"]
    assert f["line"] == line_of("small_launches.py", "p.mul_")
    assert f["figures"]["kernels_per_step"] == 96  # 32 tensors × 3 ops
    assert f["figures"]["median_kernel_us"] < 5
    assert "96 kernels per step" in f["observation"] and "median" in f["observation"]


@pytest.mark.parametrize("name, measured_by", [("dominant_op", "CPU self time"), ("gpu_dominant_op", "GPU work")])
def test_dominant_op_names_the_matrix_product_on_its_line(scenario_report, name: str, measured_by: str) -> None:
    (f,) = [f for f in scenario_report(name)["findings"] if f["kind"] == "dominant-op"]
    assert f["figures"]["op"] == "aten::mm" and f["line"] == line_of("dominant_op.py", "x @ w")
    assert measured_by in f["observation"] and "--shapes" in f["next_check"]


def test_sync_in_step_is_on_the_item_line_with_the_wait_and_the_idle_gpu_after(scenario_report) -> None:
    (f,) = [f for f in scenario_report("gpu_sync_in_step")["findings"] if f["kind"] == "sync-in-step"]
    assert f["line"] == line_of("sync_in_step.py", ".item()")
    assert f["figures"]["steps"] == 5 and f["figures"]["sync_ms"] > 0.1
    assert f["figures"]["gpu_idle_after_ms"] is not None
    assert "cudaStreamSynchronize" in f["observation"]


@pytest.mark.parametrize("name", ["startup_cost", "gpu_startup_cost"])
def test_startup_cost_keeps_both_figures_and_leaves_out_the_profilers_own_start(scenario_report, name: str) -> None:
    report = scenario_report(name)
    (f,) = [f for f in report["findings"] if f["kind"] == "startup-cost"]
    first = report["startup"]["first_steps_ms"]
    assert first[0] > 250  # the planted one-off load (a 0.25 s wait)
    assert f"{first[0]:.1f}" in f["observation"] and f"{report['ms_per_step']:.2f} ms/step" in f["observation"]
    assert "Step 2" in f["observation"] and "profiler prepares its trace" in f["observation"]
    assert f["severity"] == "info"


@pytest.mark.parametrize("name", ["unsteady_window", "gpu_unsteady_window"])
def test_unsteady_window_names_the_slow_step_and_the_line_that_only_it_ran(scenario_report, name: str) -> None:
    (f,) = [f for f in scenario_report(name)["findings"] if f["kind"] == "unsteady-window"]
    assert f["figures"]["slowest"] == "ProfilerStep#5"  # step index 5: step % 3 == 2
    # the region named by its line, as every surface names it (present.region_name)
    assert f"unsteady_window.py:{line_of('unsteady_window.py', 'time.sleep')} (from ProfilerStep#5)" in f["observation"]
    assert "ss:" not in f["observation"]


@pytest.mark.parametrize("name", ["missing_label", "gpu_missing_label"])
def test_a_label_on_a_branch_the_window_never_took_is_listed(scenario_report, name: str) -> None:
    report = scenario_report(name)
    file_id = [f["path"] for f in report["files"]].index("examples/scenarios/missing_label.py")
    assert report["missing_labels"] == [{"label": "augment", "file": str(SCRIPTS / "missing_label.py"),
                                         "line": line_of("missing_label.py", 'record_function("augment")'),
                                         "file_id": file_id}]
    assert any(r["label"] == "normalise" for r in report["regions"])
    (f,) = [f for f in report["findings"] if f["kind"] == "missing-label"]
    assert f["line"] == report["missing_labels"][0]["line"]


def test_gpu_work_profiled_cpu_only_is_unknown_not_zero(scenario_report) -> None:
    report = scenario_report("gpu_gpu_not_observed")
    (f,) = [f for f in report["findings"] if f["kind"] == "gpu-not-observed"]
    assert "not zero" in f["observation"] and "--cpu-only" in f["observation"]
    assert report["lines"] and all(line["gpu_ms"] is None for line in report["lines"])


def test_a_trace_stepscope_did_not_record_gets_findings_that_say_they_are_less_precise(scenario_report) -> None:
    report = scenario_report("gpu_plain_profiler")
    assert report["evidence"]["source"] == "other" and report["evidence"]["line_precision"] == "function"
    for f in report["findings"]:
        assert f["file"] == str(SCRIPTS / "plain_profiler.py")
        assert "not recorded by Stepscope" in f["observation"]
    (copy,) = [f for f in report["findings"] if f["kind"] == "repeated-copy"]
    assert copy["figures"]["factory"] == "aten::arange" and copy["figures"]["bytes"] == 16
    assert "cannot show whether in the same statement" in copy["observation"]
