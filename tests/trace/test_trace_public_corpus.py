"""Every trace of the public corpus (several eras, GPUs, CPU-only, multi-rank) reads and analyses."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import jsonschema
import orjson
import pytest

from stepscope.analysis.findings import Thresholds, find
from stepscope.analysis.render import render_text
from stepscope.analysis.report import analyze
from stepscope.errors import NotATraceError
from stepscope.trace import Kind, read_trace

from tests import corpus

from ..analysis.report_schema import REPORT_SCHEMA

# shared/ lies beside the project root (the team's checkout and CI); a user's clone has none
CORPUS = corpus.PUBLIC
FILES = sorted(CORPUS.rglob("*.json*")) if corpus.PRESENT else []
NOT_A_TRACE = {"benchmark_simple_add_et.json.gz"}  # an execution trace (graph of ops), not a Kineto trace

pytestmark = corpus.needs_public


@pytest.mark.parametrize("path", corpus.params(FILES, lambda p: str(p.relative_to(CORPUS))))
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
    assert "an accelerator that is not CUDA/ROCm" in report["gpu"]["reason"] and "not analysed" in report["gpu"]["reason"]


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


def test_1_9_backward_kernels_reach_the_backward_and_forward_statements(tmp_path: Path) -> None:
    # the autograd thread launches about 590 GPU events a step (64 ms of GPU time: backward kernels and
    # gradient accumulation); it records no stack, and the main thread records no op while it waits in
    # line 50 `loss.backward()`: the kernels go to the statement the main thread is waiting in.
    path = CORPUS / "kineto/tb_plugin_samples/resnet50_num_workers_0/worker0.1623143566756.pt.trace.json.gz"
    (tmp_path / "resnet50_profiler_api.py").write_text("")
    report = analyze([path], source_root=tmp_path)
    lines = {r["line"]: r for r in report["lines"]}
    assert lines[50]["gpu_ms"] > 60 and lines[50]["kernels"] > 500
    # the statements are top-level lines of the script (none nested in another): together they hold
    # every moment of GPU work in the window
    assert sum(r["gpu_ms"] for r in report["lines"]) == pytest.approx(report["window"]["gpu_ms"], abs=1e-3)
    # through sequence numbers the backward work also shows on the forward statements (46 the model, 47
    # the loss); zero_grad (49) and the batch read (42) carry forward numbers too but cause no backward
    assert report["attribution"]["backward_link"] == "sequence numbers"
    assert lines[46]["backward_gpu_ms"] > 60 and lines[46]["backward_ms"] > 20
    assert lines[47]["backward_ms"] > 0
    for line in (42, 49):
        assert lines[line]["backward_ms"] == 0.0 and lines[line]["backward_gpu_ms"] == 0.0


def test_call_stack_paths_that_resolve_nowhere_give_no_line() -> None:
    path = CORPUS / "kineto/tb_plugin_samples/resnet50_num_workers_0/worker0.1623143566756.pt.trace.json.gz"
    report = analyze([path])  # no source root: a relative path names no file
    assert report["lines"] == []
    # the finding says why it names no line, and what would name one
    (f,) = [f for f in report["findings"] if f["kind"] == "input-bound"]
    assert f["file"] is None and "call stacks name no file" in f["observation"] and "--source-root" in f["observation"]


def test_1_9_findings_and_their_evidence_name_the_statements_from_call_stacks(tmp_path: Path) -> None:
    # the same statements as the per-line table (42 the batch read, 44 `.to(device)`, 46 the model, 50
    # `loss.backward()`, 51 `optimizer.step()`), now on the findings: each moment goes to the statement
    # its op's stack names, and the autograd thread's work (no stack) to the statement waiting for it
    path = CORPUS / "kineto/tb_plugin_samples/resnet50_num_workers_0/worker0.1623143566756.pt.trace.json.gz"
    script = tmp_path / "resnet50_profiler_api.py"
    script.write_text("")
    report = analyze([path], source_root=tmp_path)
    evidence = report["evidence"]
    assert evidence["line_precision"] == "call"
    (f,) = [f for f in report["findings"] if f["kind"] == "input-bound"]
    assert (f["file"], f["line"]) == (str(script), 42)
    assert "comes from the operators' call stacks" in f["observation"]
    assert "[input-bound] (resnet50_profiler_api.py:42) The batch read" in render_text(report)
    at = lambda item: (item["file"], item["line"], item["precision"])  # noqa: E731
    # both host-to-device copies (the batch and its labels) and the waits behind them: line 44
    assert {at(c) for c in evidence["h2d_copies"]} == {(str(script), 44, "call")}
    assert at(evidence["syncs"]) == (str(script), 44, "call") and evidence["syncs"]["steps"] == 6
    # the backward kernels, launched by the autograd thread, make line 50 the top launching line
    assert at(evidence["kernels"]) == (str(script), 50, "call") and evidence["kernels"]["top_line_kernels"] > 500
    ops = {o["name"]: at(o) for o in evidence["ops"]}
    assert ops["aten::cudnn_convolution"] == (str(script), 46, "call")
    assert ops["aten::cudnn_convolution_backward_weight"] == (str(script), 50, "call")
    assert ops["Optimizer.step#SGD.step"] == (str(script), 51, "call")
    assert "repeated-copy" not in [f["kind"] for f in report["findings"]]  # data batches, no factory
    # with a threshold low enough to fire, the operator finding lands on the backward statement
    (op,) = [f for f in find(report, Thresholds(dominant_op_share=0.1)) if f["kind"] == "dominant-op"]
    assert (op["file"], op["line"]) == (str(script), 50)
    assert op["figures"]["op"] == "aten::cudnn_convolution_backward_weight"


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


def test_gpu_stream_step_markers_stand_in_for_missing_cpu_markers(tmp_path: Path) -> None:
    # No public trace has ProfilerStep#N on a GPU stream only; this ROCm trace has both, so the same
    # trace without its CPU markers shows what such a trace gives. Step 1's GPU marker spans 1 ms, but
    # the backward kernels (autograd thread) and the optimizer's (its own label) run after it: the step
    # still completes when they end.
    source = CORPUS / "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"
    doc = orjson.loads(gzip.decompress(source.read_bytes()))
    doc["traceEvents"] = [e for e in doc["traceEvents"]
                          if not (e.get("cat") == "user_annotation" and str(e.get("name")).startswith("ProfilerStep#"))]
    gpu_only = tmp_path / "gpu_markers.json"
    gpu_only.write_bytes(orjson.dumps(doc))
    with_cpu, from_gpu = analyze([source]), analyze([gpu_only])
    jsonschema.validate(from_gpu, REPORT_SCHEMA)
    assert [s["name"] for s in from_gpu["steps"]] == ["ProfilerStep#1"]  # step 2 launched no GPU work
    assert from_gpu["steps"][0]["cpu_ms"] is None
    assert any("markers on the GPU stream" in n for n in from_gpu["notes"])
    # from the first launch (0.25 ms after the CPU marker starts) to the optimizer kernel's end (0.11 ms
    # before the CPU marker ends): 8.928 ms, against 9.288 ms for the CPU-marked step
    assert from_gpu["ms_per_step"] == pytest.approx(8.928, abs=1e-3)
    assert with_cpu["steps"][0]["ms"] == pytest.approx(9.288, abs=1e-3)
    # the window holds all the GPU work of the CPU-marked one (1 step here, 2 there)
    assert from_gpu["window"]["gpu_ms"] == pytest.approx(2 * with_cpu["window"]["gpu_ms"], abs=1e-3)


def test_a_folder_of_two_public_ranks_names_no_rank_the_collectives_do_not_single_out(tmp_path: Path) -> None:
    # two ranks (of 128) of one job, each with 2 steps; rank 1's steps are ~4 ms longer, but both
    # spend about the same time in collective kernels: neither is the one the other waits for
    for rank in (1, 0):
        shutil.copy(CORPUS / f"hta/trace_filter/sampled_rank-{rank}.json.gz", tmp_path)
    report = analyze([tmp_path])
    jsonschema.validate(report, REPORT_SCHEMA)
    assert report["machine"]["rank"] == 0
    assert [(r["rank"], r["steps"], r["slowest"]) for r in report["ranks"]] == [(0, 2, False), (1, 2, False)]
    assert report["slowest_rank"] is None and not report.get("rank_wait")
    rank0, rank1 = report["ranks"]
    assert rank0["ms_per_step"] == report["ms_per_step"] == pytest.approx(615.14, abs=0.01)
    assert rank1["ms_per_step"] == pytest.approx(619.30, abs=0.01)
    assert rank0["gpu_ms"] == pytest.approx(273.83, abs=0.01) and rank1["gpu_ms"] == pytest.approx(290.03, abs=0.01)
    # no stacks in these traces: their labels say where each rank's time goes
    assert rank1["regions"][0]["label"] == "## backward ##" and len(rank1["regions"]) == 10
    assert any("rank 0's" in n for n in report["notes"])
    assert any("no rank stands out as the one the others wait for" in n for n in report["notes"])
    assert "rank-imbalance" not in [f["kind"] for f in report["findings"]]
