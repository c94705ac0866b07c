"""Every trace of the public corpus (several eras, GPUs, CPU-only, multi-rank) reads and analyses."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from stepscope.analysis.report import analyze
from stepscope.errors import NotATraceError
from stepscope.trace import Kind, read_trace

from ..analysis.report_schema import REPORT_SCHEMA

# shared/ lies beside the project root (the team's checkout and CI); a user's clone has none
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "traces" / "public"
FILES = sorted(p for p in CORPUS.rglob("*.json*")) if CORPUS.is_dir() else []
NOT_A_TRACE = {"benchmark_simple_add_et.json.gz"}  # an execution trace (graph of ops), not a Kineto trace

pytestmark = pytest.mark.skipif(not FILES, reason=f"public trace corpus not present at {CORPUS}")


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_reads_or_refuses_with_a_reason(path: Path) -> None:
    if path.name in NOT_A_TRACE:
        with pytest.raises(NotATraceError, match="without traceEvents"):
            read_trace(path)
        return
    trace = read_trace(path)
    assert len(trace) > 0
    assert all(d >= 0 for d in trace.dur)
    report = analyze([path])  # every era is read: a trace without step markers is one window
    jsonschema.validate(report, REPORT_SCHEMA)
    if report["window"]["per"] == "window":
        assert report["steps"] == [] and report["ms_per_step"] is None
        assert any("no ProfilerStep#N" in n for n in report["notes"])
    else:
        assert report["ms_per_step"] > 0
        assert all(s["ms"] >= 0 for s in report["steps"])
    has_gpu = any(k in Kind.GPU_WORK for k in trace.kind)
    assert report["gpu"]["observed"] is has_gpu
    for region in report["regions"]:
        assert region["wall_ms"] >= 0
        assert (region["gpu_ms"] is None) is (not has_gpu)


def test_2020_bare_array_resnet_has_six_steps_with_gpu() -> None:
    path = CORPUS / "kineto/tb_plugin_samples/resnet50_num_workers_4/worker0.pt.trace.json.gz"
    report = analyze([path])
    assert [s["name"] for s in report["steps"]] == [f"ProfilerStep#{n}" for n in range(5, 11)]
    assert report["gpu"]["observed"] is True
    assert report["machine"]["device"] == "no device listed in the trace"


def test_amd_trace_is_gpu_analysis_on_the_named_device() -> None:
    report = analyze([CORPUS / "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"])
    assert report["gpu"]["observed"] is True
    assert report["machine"]["device"] == "AMD Radeon Graphics"
    assert report["attribution"]["gpu_unlinked"] == 0
    assert report["attribution"]["backward_link"] == "flows"


def test_cpu_only_trace_says_gpu_not_observed() -> None:
    report = analyze([CORPUS / "hta/cpu_only_v1/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"])
    assert report["gpu"]["observed"] is False
    assert "CPU-only" in report["gpu"]["reason"]
    assert report["machine"]["rank"] == 34


def test_mtia_device_events_are_not_presented_as_gpu_time() -> None:
    report = analyze([CORPUS / "hta/mtia_trace_single_rank/mtia_rank_0.json.gz"])
    assert report["gpu"]["observed"] is False
    assert "non-CUDA device" in report["gpu"]["reason"]


def test_1_9_call_stacks_name_the_calling_statements(tmp_path: Path) -> None:
    # torch 1.9's resnet50 sample (kineto tb_plugin): ops carry "Call stack" args naming the script's
    # lines: 42 `for step, data in enumerate(trainloader)`, 44 `inputs, labels = ....to(device)`,
    # 46 `outputs = model(inputs)`, 47 loss, 49 zero_grad, 50 backward, 51 `optimizer.step()`.
    path = CORPUS / "kineto/tb_plugin_samples/resnet50_num_workers_0/worker0.1623143566756.pt.trace.json.gz"
    script = tmp_path / "resnet50_profiler_api.py"
    script.write_text("")  # the stacks name it relative to the script's folder
    report = analyze([path], source_root=tmp_path)
    lines = {r["line"]: r for r in report["lines"]}
    jsonschema.validate(report, REPORT_SCHEMA)
    assert {42, 44, 46, 47, 49, 50, 51} <= set(lines)
    assert all(r["precision"] == "call" and r["file"] == str(script) for r in report["lines"])
    # the two host-to-device copies of line 44: a 32×3×224×224 float batch and 32 int64 labels
    assert lines[44]["copies"]["h2d"] == {"count": 2, "bytes": 32 * 3 * 224 * 224 * 4 + 32 * 8}
    assert lines[46]["kernels"] > 100 and lines[46]["gpu_ms"] > 0  # the forward pass
    assert lines[46]["shapes"][0]["shapes"][0][0] == 32  # batch of 32 into the top op of the forward
    assert lines[44]["shapes"][0]["op"] == "aten::to"
    # statements of one step never add up to more than the step
    assert sum(r["wall_ms"] for r in report["lines"]) <= report["ms_per_step"]
    # 1.9 memory events carry no allocated total: the peak is not recorded, never 0
    assert lines[46]["alloc_bytes"] > 0 and lines[46]["peak_bytes"] is None


def test_call_stack_paths_that_resolve_nowhere_give_no_line() -> None:
    path = CORPUS / "kineto/tb_plugin_samples/resnet50_num_workers_0/worker0.1623143566756.pt.trace.json.gz"
    report = analyze([path])  # no source root: a relative path names no file
    assert report["lines"] == []


@pytest.mark.parametrize("name", [
    "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "hta/with_gpu_user_annotation/step_based_trace_2543932.json.gz",
])
def test_traces_without_step_markers_are_one_window_on_their_gpu(name: str) -> None:
    report = analyze([CORPUS / name])
    assert report["steps"] == [] and report["ms_per_step"] is None
    assert report["window"]["per"] == "window" and report["window"]["ms"] > 0
    assert report["gpu"]["observed"] is True
    assert any(r["gpu_ms"] is not None and r["gpu_ms"] > 0 for r in report["regions"])


def test_a_window_names_the_iteration_like_labels_it_did_not_use_as_steps() -> None:
    report = analyze([CORPUS / "hta/with_gpu_user_annotation/step_based_trace_2543932.json.gz"])
    note = next(n for n in report["notes"] if "no ProfilerStep#N" in n)
    assert "5 x Optimizer.step#SGD.step" in note and "prof.step()" in note
