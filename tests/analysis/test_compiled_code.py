"""Compiled graphs' kernels on the user's lines (analysis/compiled_code.py), on traces made in the test
with the shape torch writes on a GPU: `## Call CompiledFxGraph <key> ##` regions holding Triton kernel
records and extern aten ops, a backward graph inside `CompiledFunctionBackward`, and a graph replayed
by `cudaGraphLaunch` (mode="reduce-overhead"); and the run's compile.json as the agent writes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .kineto_synth import Synth, run_folder
from stepscope.analysis.present import line_hover
from stepscope.analysis.report import analyze

FWD, BWD, REPLAY = "fwdkey", "bwdkey", "replaykey"


def stack(root: Path, *frames: tuple[int, str, str]) -> str:
    """One FX node's stack trace as Inductor records it (outermost frame first)."""
    return "".join(f'  File "{root / "model.py"}", line {line}, in {fn}\n    {code}\n        ^^^^\n'
                   for line, fn, code in frames)


def compile_doc(root: Path, *, replay: bool = False) -> dict:
    fused = {"triton_poi_fused_gelu_sigmoid_0:1": [stack(root, (14, "forward", "a = gelu(h)")),
                                                    stack(root, (15, "forward", "b = torch.sigmoid(h)"))],
             "extern_kernels.mm:2": [stack(root, (16, "forward", "h = self.down(a * b)"))],
             "triton_per_fused_add_1:3": [stack(root, (30, "forward", "x = block(x)"),
                                                (17, "forward", "return x + h"))]}
    graphs = [{"frame_id": 0, "frame_compile_id": 0, "key": REPLAY if replay else FWD, "kernels": fused}]
    if not replay:
        graphs.append({"frame_id": 0, "frame_compile_id": 0, "key": BWD, "kernels": {
            "triton_poi_fused_sigmoid_backward_0:1": [stack(root, (15, "forward", "b = torch.sigmoid(h)"))]}})
    return {"torch": "2.11.0+cu130", "enabled": {}, "graphs": graphs, "graph_breaks": [], "compiles": []}


def eager_launch(s: Synth, name: str, cpu: tuple[float, float], gpu: tuple[float, float], *, tid: int = 100) -> None:
    """A kernel record (Inductor's, or an aten op) around one launch."""
    s.op(name, cpu[0], cpu[1] - cpu[0], tid=tid)
    s.launch(cpu[0] + 2, gpu[0], gpu[1] - gpu[0], tid=tid, name=name if name.startswith("triton_") else "gemm_kernel")


def compiled_step() -> Synth:
    """One step: the compiled forward called from line 12, its backward on the autograd thread."""
    s = Synth()
    s.step(1, 0, 1000)
    s.region("ss:f0:12", 10, 390)
    s.op(f"## Call CompiledFxGraph {FWD} ##", 20, 280)
    eager_launch(s, "triton_poi_fused_gelu_sigmoid_0", (30, 60), (100, 150))
    eager_launch(s, "aten::mm", (70, 120), (150, 250))
    eager_launch(s, "triton_per_fused_add_1", (130, 160), (250, 270))
    s.op("CompiledFunctionBackward", 400, 300, tid=200)
    s.op(f"## Call CompiledFxGraph {BWD} ##", 410, 280, tid=200)
    eager_launch(s, "triton_poi_fused_sigmoid_backward_0", (420, 440), (700, 760), tid=200)
    return s


def report_of(tmp_path: Path, synth: Synth, doc: dict | None) -> dict:
    run = run_folder(tmp_path, synth, files={"f0": "train.py", "f1": "model.py"})
    if doc is not None:
        (run / "compile.json").write_text(json.dumps(doc))
    return analyze([run / "trace.json"])


def by_line(report: dict) -> dict[tuple[str, int], dict]:
    return {(Path(x["file"]).name, x["line"]): x for x in report["lines"]}


def test_each_kernel_lands_on_its_lines_and_a_fused_kernel_is_shown_on_each_as_shared(tmp_path: Path):
    root = tmp_path / "ws"
    report = report_of(tmp_path, compiled_step(), compile_doc(root))
    lines = by_line(report)
    gelu, sigmoid, down, add, caller = (lines[("model.py", n)] for n in (14, 15, 16, 17, 30))
    assert {x["precision"] for x in (gelu, sigmoid, down, add, caller)} == {"compiled"}
    # the fused kernel (50 µs) on both of its lines, each saying it is shared with the other
    assert gelu["gpu_ms"] == sigmoid["gpu_ms"] == 0.05
    assert [f["line"] for f in gelu["compiled"]["fused_with"]] == [15]
    assert [f["line"] for f in sigmoid["compiled"]["fused_with"]] == [14]
    assert gelu["compiled"]["shared_gpu_ms"] == 0.05
    assert down["gpu_ms"] == 0.1 and down["kernels"] == 1 and down["compiled"]["fused_with"] == []
    assert down["compiled"]["shared_gpu_ms"] == 0.0
    # the calling frame inside the compiled code holds its callee's kernel, as nested lines do
    assert add["gpu_ms"] == caller["gpu_ms"] == 0.02
    # the backward graph's kernel is on its forward line, as backward, not in the forward figures
    assert sigmoid["backward_gpu_ms"] == 0.06 and gelu["backward_gpu_ms"] == 0.0
    # and its name is listed apart from the forward kernels (the hover says which is which)
    assert sigmoid["compiled"]["kernels"] == ["triton_poi_fused_gelu_sigmoid_0"]
    assert sigmoid["compiled"]["backward_kernels"] == ["triton_poi_fused_sigmoid_backward_0"]
    assert gelu["compiled"]["backward_kernels"] == []
    hover = line_hover(sigmoid, report)
    assert "- compiled kernels: triton_poi_fused_gelu_sigmoid_0\n" in hover
    assert "- backward kernels: triton_poi_fused_sigmoid_backward_0\n" in hover
    # the line that calls the compiled model keeps the whole forward: nothing is counted twice there
    assert lines[("train.py", 12)]["gpu_ms"] == 0.17
    assert report["window"]["gpu_ms"] == 0.23  # the step's GPU time: the trace's, not a sum of lines
    summary = report["compiled_code"]
    assert summary["kernel_calls_per_step"] == 3 and summary["kernel_calls_attributed_per_step"] == 3
    assert summary["graphs_called"] == 2 and summary["graphs_without_records"] == 0


def test_a_graph_replayed_from_a_cuda_graph_is_aligned_by_its_kernels_names(tmp_path: Path):
    s = Synth()
    s.step(1, 0, 1000)
    s.region("ss:f0:12", 10, 390)
    s.op(f"## Call CompiledFxGraph {REPLAY} ##", 20, 280)
    s._x("cuda_runtime", "cudaGraphLaunch", 30, 20, args={"correlation": 77, "cbid": 311})
    for name, start, dur in (("triton_poi_fused_gelu_sigmoid_0", 100, 50), ("gemm_kernel", 150, 100),
                             ("splitKreduce_kernel", 250, 10), ("triton_per_fused_add_1", 260, 20)):
        s._x("kernel", name, start, dur, pid=0, tid=7, args={"device": 0, "stream": 7, "correlation": 77})
    report = report_of(tmp_path, s, compile_doc(tmp_path / "ws", replay=True))
    lines = by_line(report)
    # the two kernels between the named ones are the extern matmul's (cuBLAS's gemm and its reduction)
    assert lines[("model.py", 16)]["gpu_ms"] == 0.11 and lines[("model.py", 16)]["kernels"] == 2
    assert lines[("model.py", 14)]["gpu_ms"] == 0.05 and lines[("model.py", 17)]["gpu_ms"] == 0.02
    assert lines[("train.py", 12)]["gpu_ms"] == 0.18  # the replaying line keeps the whole replay
    summary = report["compiled_code"]
    assert summary["replayed_kernels_per_step"] == summary["replayed_kernels_attributed_per_step"] == 4
    # one graph launch replays four kernels: the step is not made of four launches
    assert report["evidence"]["kernels"]["launches"] == 1 and report["evidence"]["kernels"]["graph_kernels"] == 4


def test_without_records_the_kernels_stay_on_the_calling_line_and_the_report_says_why(tmp_path: Path):
    report = report_of(tmp_path, compiled_step(), None)
    assert not [x for x in report["lines"] if x["precision"] == "compiled"]
    assert by_line(report)[("train.py", 12)]["gpu_ms"] == 0.17
    assert report["compiled_code"]["source"] is None
    assert any("run has no compile.json" in n and "stay on the line that calls" in n for n in report["notes"])


def test_a_record_for_another_graph_or_a_kernel_it_does_not_name_stays_on_the_calling_line(tmp_path: Path):
    doc = compile_doc(tmp_path / "ws")
    doc["graphs"][0]["key"] = "someothergraph"
    del doc["graphs"][1]["kernels"]["triton_poi_fused_sigmoid_backward_0:1"]
    doc["graphs"][1]["kernels"]["triton_poi_fused_other_9:1"] = []
    report = report_of(tmp_path, compiled_step(), doc)
    assert not [x for x in report["lines"] if x["precision"] == "compiled"]
    assert report["compiled_code"]["graphs_without_records"] == 1
    assert any("1 compiled graph(s) have no provenance record" in n for n in report["notes"])
    assert any("could not be matched to a provenance record" in n for n in report["notes"])


def test_a_line_that_no_longer_holds_the_recorded_code_is_left_out(tmp_path: Path):
    """A cached compilation of an older version of the file names old line numbers: the record's quoted
    code is checked against the file as it is now."""
    root = tmp_path / "ws"
    root.mkdir()
    source = ["# model"] * 40
    source[13], source[14] = "    a = gelu(h)", "    # a comment moved the next statements down"
    source[15], source[16], source[29] = "    h = self.down(a * b)", "    return x + h", "        x = block(x)"
    (root / "model.py").write_text("\n".join(source) + "\n")
    report = report_of(tmp_path, compiled_step(), compile_doc(root))
    lines = by_line(report)
    assert ("model.py", 15) not in lines  # it holds a comment now
    assert lines[("model.py", 14)]["compiled"]["fused_with"] == []
    assert report["compiled_code"]["stale_frames"] == 2
    assert any("no longer hold the code they quote" in n for n in report["notes"])


def test_a_run_folder_analysed_on_another_machine_finds_its_files_by_the_file_table(tmp_path: Path):
    """compile.json keeps the paths of the machine that ran the program."""
    doc = json.loads(json.dumps(compile_doc(Path("/home/someone/project"))))
    report = report_of(tmp_path, compiled_step(), doc)
    lines = by_line(report)
    assert lines[("model.py", 14)]["file"] == str(tmp_path / "ws" / "model.py")
    assert lines[("model.py", 14)]["precision"] == "compiled"


@pytest.mark.parametrize("doc", [{"graphs": "no"}, {"graphs": [{"key": FWD, "kernels": {"bad": 3, "x:y": []}}]},
                                 {"graphs": [{"key": FWD, "kernels": {"triton_poi_fused_gelu_sigmoid_0:1": ["garbage"]}}]}])
def test_malformed_records_attribute_nothing_and_break_nothing(tmp_path: Path, doc: dict):
    report = report_of(tmp_path, compiled_step(), doc)
    assert not [x for x in report["lines"] if x["precision"] == "compiled"]
    assert by_line(report)[("train.py", 12)]["gpu_ms"] == 0.17


# A real capture: `stepscope profile train.py --line 11 --active 3` of tests/data/compiled/cpu_mlp/ws
# (torch 2.13 CPU, Inductor's C++ kernels with their profiler records, the run's compile.json).
CPU_RUN = Path(__file__).resolve().parents[1] / "data" / "compiled" / "cpu_mlp"


def test_a_real_inductor_capture_on_the_cpu_puts_every_generated_kernel_on_its_lines(tmp_path: Path):
    report = analyze([CPU_RUN])
    lines = by_line(report)
    summary = report["compiled_code"]
    assert summary["source"] == "inductor provenance" and summary["torch"] == "2.13.0+cpu"
    assert summary["kernel_calls_per_step"] == summary["kernel_calls_attributed_per_step"] == 12
    compiled = {key for key, x in lines.items() if x["precision"] == "compiled"}
    # every statement of Block.forward, the loop calling the blocks and the head, all in model.py
    assert compiled == {("model.py", n) for n in (14, 15, 16, 17, 18, 19, 30, 31)}
    # gelu (16), sigmoid (17) and the product passed to self.down (18): one fused C++ kernel
    fused = lambda n: [f["line"] for f in lines[("model.py", n)]["compiled"]["fused_with"]]  # noqa: E731
    assert fused(18) == [16, 17] and fused(16) == [17, 18] and fused(17) == [16, 18]
    assert lines[("model.py", 16)]["compiled"]["shared_ms"] == lines[("model.py", 16)]["wall_ms"]
    assert "aten::addmm" in lines[("model.py", 15)]["compiled"]["kernels"]  # the extern matmul of self.up
    # the backward graph's kernels on their forward lines (as backward)
    assert all(lines[("model.py", n)]["backward_ms"] > 0 for n in (14, 15, 16, 30))
    assert all(lines[("model.py", n)]["wall_ms"] <= lines[("model.py", 30)]["wall_ms"] for n in (14, 15, 16, 18, 19))
    # the calling line holds its whole compiled call, as without records; the step holds the line
    caller = lines[("train.py", 12)]
    assert lines[("model.py", 30)]["wall_ms"] <= caller["wall_ms"] <= report["ms_per_step"]
    for x in report["lines"]:
        assert x["cpu_self_ms"] <= x["wall_ms"]
    bare = tmp_path / "run"
    bare.mkdir()
    for name in ("trace.json.gz", "files.json", "scenario.json"):
        (bare / name).write_bytes((CPU_RUN / name).read_bytes())
    (bare / "files.json").write_text(json.dumps({"root": str(CPU_RUN / "ws"), "files": {"f0": "train.py", "f1": "model.py"}}))
    without = by_line(analyze([bare]))
    assert without[("train.py", 12)] == {**caller, "file_id": without[("train.py", 12)]["file_id"]}
    assert not [key for key, x in without.items() if x["precision"] == "compiled"]


def test_the_text_report_and_the_hover_say_which_lines_a_fused_kernel_is_shared_with():
    from stepscope.analysis.render import render_text

    report = analyze([CPU_RUN])
    text = render_text(report)
    assert "compiled code (inductor provenance, torch 2.13.0+cpu): 12 of 12 generated kernel calls per step" in text
    assert "model.py:18 fused with lines 16–17: shared" in text
    hover = line_hover(by_line(report)[("model.py", 18)], report)
    assert "fused with lines 16–17" in hover and "not added up" in hover
    assert "generated from this statement" in hover


# A real capture on the H200 (torch 2.11.0+cu130): benchmarks/gpu_cases/cuda_graph.py --variant graph, a whole
# training step captured by hand with torch.cuda.graph and replayed by `graph.replay()` at line 43.
REPLAY_RUN = Path(__file__).resolve().parents[1] / "data" / "compiled" / "h200_graph_replay"


def test_a_step_replaying_a_cuda_graph_is_a_training_step_of_few_launches():
    report = analyze([REPLAY_RUN])
    contents = report["step_contents"]
    assert contents["replays_graph"] and contents["kind"] == "training"  # not "forward (inference)"
    assert contents["backward"] and contents["optimizer_step"]
    kernels = report["evidence"]["kernels"]
    assert kernels["graph_launches"] == 1 and kernels["graph_kernels"] == 24
    assert kernels["launches"] < 10 < kernels["count"]  # one launch replays 24 kernels
    assert "small-launches" not in [f["kind"] for f in report["findings"]]
    replay = by_line(report)[("cuda_graph.py", 43)]
    assert replay["kernels"] == 24 and replay["precision"] == "exact"  # on the line that replays it


@pytest.mark.parametrize("replayed", [True, False])
def test_a_hundred_small_kernels_from_one_graph_launch_are_not_launch_bound(tmp_path: Path, replayed: bool):
    s = Synth()
    for k in range(3):
        t0 = k * 10_000
        s.step(k + 1, t0, 10_000)
        s.region("ss:f0:12", t0 + 10, 9_000)
        if replayed:
            s._x("cuda_runtime", "cudaGraphLaunch", t0 + 20, 20, args={"correlation": 900 + k, "cbid": 311})
        for i in range(100):
            if replayed:
                s._x("kernel", "small_kernel", t0 + 100 + 20 * i, 5, pid=0, tid=7,
                     args={"device": 0, "stream": 7, "correlation": 900 + k})
            else:
                s.launch(t0 + 20 + 80 * i, t0 + 100 + 80 * i, 5, name="small_kernel")
    report = analyze([run_folder(tmp_path, s) / "trace.json"])
    kernels = report["evidence"]["kernels"]
    assert kernels["count"] == 100 and kernels["launches"] == (1 if replayed else 100)
    assert ("small-launches" in [f["kind"] for f in report["findings"]]) is not replayed


def test_the_inline_label_of_a_fused_line_says_what_it_is_fused_with():
    from stepscope.analysis.present import line_label

    report = analyze([CPU_RUN])
    lines = by_line(report)
    assert line_label(lines[("model.py", 17)], report).endswith(" · fused with lines 16, 18")
    assert "fused" not in line_label(lines[("model.py", 15)], report)


def test_a_frame_inside_a_statement_spread_over_lines_lands_on_the_statements_first_line(tmp_path: Path):
    root = tmp_path / "ws"
    root.mkdir()
    source = ["# model"] * 40
    source[12:16] = ["def forward(h):", "    a = gelu(", "        h)", "    b = torch.sigmoid(h)"]  # lines 13-16
    (root / "model.py").write_text("\n".join(source) + "\n")
    doc = compile_doc(root)
    doc["graphs"][0]["kernels"]["triton_poi_fused_gelu_sigmoid_0:1"] = [stack(root, (15, "forward", "h)"))]
    lines = by_line(report_of(tmp_path, compiled_step(), doc))
    assert lines[("model.py", 14)]["gpu_ms"] == 0.05 and ("model.py", 15) not in lines


# Real captures on the H200 (torch 2.11.0+cu130, Inductor's provenance on): benchmarks/gpu_cases/compiled_mlp.py
# eager and compiled, compiled_block.py with mode="reduce-overhead" (benchmarks/gpu_cases/record_compiled.sh).
H200 = Path(__file__).resolve().parents[1] / "data" / "compiled"


def _gpu_shares(report: dict, lines: range) -> dict[int, float]:
    busy = report["evidence"]["kernels"]["gpu_busy_ms"]
    return {n: x["gpu_ms"] / busy for (name, n), x in by_line(report).items() if n in lines and name.startswith("compiled_")}


def test_a_compiled_mlp_on_the_h200_has_every_generated_kernel_on_the_model_lines_as_eager_does():
    compiled, eager = analyze([H200 / "h200_mlp_compiled"]), analyze([H200 / "h200_mlp_eager"])
    summary = compiled["compiled_code"]
    assert summary["source"] == "inductor provenance" and summary["torch"] == "2.11.0+cu130"
    assert summary["kernel_calls_per_step"] == summary["kernel_calls_attributed_per_step"] == 46
    lines = by_line(compiled)
    model = range(17, 22)  # Block.forward: norm, up, gelu * sigmoid, down, residual
    assert {n for (name, n), x in lines.items() if x["precision"] == "compiled"} == {*model, 32, 33}
    # the backward graph's kernels on their forward lines, as in eager mode
    assert all(lines[("compiled_mlp.py", n)]["backward_gpu_ms"] > 0 for n in model)
    gelu = lines[("compiled_mlp.py", 19)]["compiled"]  # the forward's fused kernel, and its backward's apart
    assert gelu["kernels"] == ["triton_poi_fused_gelu_mul_sigmoid_1"]
    assert gelu["backward_kernels"] == ["triton_poi_fused_add_gelu_gelu_backward_mul_sigmoid_sigmoid_backward_5"]
    # the same lines carry comparable shares of the GPU's busy time: the two matmuls lead in both
    c, e = _gpu_shares(compiled, model), _gpu_shares(eager, model)
    assert sorted(c, key=c.get)[-2:] == sorted(e, key=e.get)[-2:] == [18, 20]
    assert all(abs(c[n] - e[n]) < 0.06 for n in model)
    # a fused kernel is shown on each of its lines as shared, never added twice to the step
    assert [f["line"] for f in lines[("compiled_mlp.py", 17)]["compiled"]["fused_with"]] == [20, 21]
    for x in compiled["lines"]:
        assert x["cpu_self_ms"] <= x["wall_ms"] <= compiled["window"]["mean_step_ms"]
    # 93 small kernels per step: the next check of a step that is already compiled is not "torch.compile"
    (launches,) = [f for f in compiled["findings"] if f["kind"] == "small-launches"]
    assert "reduce-overhead" in launches["next_check"] and "CUDA graphs / torch.compile" not in launches["next_check"]
    (eager_launches,) = [f for f in eager["findings"] if f["kind"] == "small-launches"]
    assert "CUDA graphs / torch.compile" in eager_launches["next_check"]


def test_a_reduce_overhead_block_on_the_h200_puts_its_replayed_kernels_on_the_captured_lines():
    report = analyze([H200 / "h200_block_reduce_overhead"])
    summary = report["compiled_code"]
    assert summary["replayed_kernels_per_step"] == summary["replayed_kernels_attributed_per_step"] == 47
    kernels = report["evidence"]["kernels"]
    assert kernels["graph_launches"] == 2 and kernels["graph_kernels"] == 47
    assert "small-launches" not in [f["kind"] for f in report["findings"]]
    lines = by_line(report)
    attention, block = range(21, 31), (43, 44, 45)
    assert all(lines[("compiled_block.py", n)]["precision"] == "compiled" for n in (*attention, *block))
    # the calling line holds the whole compiled call; the model's lines are parts of it
    caller = lines[("compiled_block.py", 61)]
    assert all(lines[("compiled_block.py", n)]["gpu_ms"] <= caller["gpu_ms"] for n in (*attention, *block))
    # the replayed backward graph's kernels on their forward lines: GPU time without CPU time, in the text too
    assert lines[("compiled_block.py", 43)]["backward_gpu_ms"] > 0.5 and lines[("compiled_block.py", 43)]["backward_ms"] == 0
    from stepscope.analysis.render import render_text
    row = next(r for r in render_text(report).splitlines() if r.startswith("compiled_block.py:43 ")).split()
    # file:line, precision, wall, self, gpu, bwd (CPU), bwd gpu, kernels, sync
    assert row[5] == "0.000" and row[6] == f"{lines[('compiled_block.py', 43)]['backward_gpu_ms']:.3f}"


def test_lines_whose_kernels_are_replayed_from_a_cuda_graph_are_labelled_by_their_gpu_time():
    # under reduce-overhead the model's lines launch nothing on the CPU (wall 0): their GPU time,
    # forward and backward, is what the editor must show
    from stepscope.analysis.present import heat, line_hover, line_label, worth_a_label

    report = analyze([H200 / "h200_block_reduce_overhead"])
    lines = by_line(report)
    residual = lines[("compiled_block.py", 43)]  # x = x + self.attn(self.norm1(x)): ~10% of the GPU's step
    assert residual["wall_ms"] == 0.0 and residual["gpu_ms"] > 0.05 * report["window"]["mean_step_ms"]
    assert worth_a_label(residual, report, 0.01)
    assert heat(residual, report) == pytest.approx(residual["gpu_ms"] / report["window"]["mean_step_ms"])
    assert f"GPU {residual['gpu_ms']:.2f} ms" in line_label(residual, report)
    assert f"- backward: GPU {residual['backward_gpu_ms']:.2f} ms" in line_hover(residual, report)
    mask = lines[("compiled_block.py", 26)]  # torch.triu(torch.ones(...)): a microsecond of GPU time
    assert not worth_a_label(mask, report, 0.01)
