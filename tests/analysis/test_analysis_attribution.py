"""Per-line figures on small synthetic traces whose answers can be checked by hand.

Layout of each 1 ms step (µs from the step start), repeated in two steps:
  ss:f0:5  [100, 600]  calls a function twice, each call labelled ss:f1:3: [200, 300] and [350, 450]
     a kernel launched at 250 runs [260, 360] (stream 7); another launched at 270 runs [300, 400] (stream 8)
  ss:f0:6  [600, 900]  a 4096-byte host-to-device copy launched at 610 runs [700, 750];
                       cudaStreamSynchronize blocks [800, 880]
  ss:f0:7  [940, 995]  loss.backward(): a backward op on the autograd thread [950, 990] launches a
                       kernel at 960 that runs [970, 1000]; its forward point is in ss:f0:5 at 130
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .kineto_synth import Synth, run_folder
from stepscope.analysis.report import analyze

AUTOGRAD = 200


def build(*, link: str = "flows", gpu: bool = True) -> Synth:
    s = Synth() if gpu else Synth(devices=[])
    for k in range(2):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.region("ss:f0:5", t + 100, 500)
        s.op("aten::linear", t + 120, 60, seq=10 + k if link == "seq" else None)
        s.region("ss:f1:3", t + 200, 100)
        s.region("ss:f1:3", t + 350, 100)
        s.region("ss:f0:6", t + 600, 300)
        s.region("ss:f0:7", t + 940, 55)
        s.op("autograd::engine::evaluate_function: AddmmBackward0", t + 950, 40, tid=AUTOGRAD,
             seq=10 + k if link == "seq" else None)
        if link == "flows":
            s.flow(k + 1, t + 130, t + 951, end_tid=AUTOGRAD)
        if gpu:
            s.launch(t + 250, t + 260, 100, stream=7)
            s.launch(t + 270, t + 300, 100, stream=8)
            s.launch(t + 610, t + 700, 50, kind="gpu_memcpy", nbytes=4096)
            s.sync(t + 800, 80)
            s.launch(t + 960, t + 970, 30, tid=AUTOGRAD)
    return s


def by_line(report: dict, root: Path) -> dict:
    return {(Path(r["file"]).relative_to(root).as_posix(), r["line"]): r for r in report["lines"]}


def test_nested_lines_count_once_and_self_time_excludes_nested_lines(tmp_path: Path) -> None:
    run = run_folder(tmp_path, build())
    lines = by_line(analyze([run / "trace.json"]), tmp_path / "ws")
    outer, inner = lines[("train.py", 5)], lines[("model/net.py", 3)]
    assert outer["wall_ms"] == 0.5 and outer["cpu_total_ms"] == 0.5
    assert outer["cpu_self_ms"] == pytest.approx(0.3)  # 0.5 minus the two nested 0.1 ms calls
    assert inner["wall_ms"] == pytest.approx(0.2) and inner["cpu_self_ms"] == pytest.approx(0.2)
    assert inner["count"] == 2 and outer["count"] == 1
    assert all(r["precision"] == "exact" for r in lines.values())
    assert all(Path(r["file"]).is_absolute() for r in lines.values())


def test_gpu_time_is_the_union_of_kernels_launched_from_the_line(tmp_path: Path) -> None:
    run = run_folder(tmp_path, build())
    lines = by_line(analyze([run / "trace.json"]), tmp_path / "ws")
    # two overlapping kernels [260, 360] and [300, 400] on two streams: 0.14 ms of GPU time, not 0.2
    assert lines[("model/net.py", 3)]["gpu_ms"] == pytest.approx(0.14)
    assert lines[("model/net.py", 3)]["kernels"] == 2
    assert lines[("train.py", 5)]["gpu_ms"] == pytest.approx(0.14)  # nested lines are inclusive


def test_copies_by_direction_and_sync_time_land_on_their_line(tmp_path: Path) -> None:
    run = run_folder(tmp_path, build())
    line6 = by_line(analyze([run / "trace.json"]), tmp_path / "ws")[("train.py", 6)]
    assert line6["copies"]["h2d"] == {"count": 1, "bytes": 4096}
    assert line6["copies"]["d2h"] == {"count": 0, "bytes": 0}
    assert line6["gpu_ms"] == pytest.approx(0.05)
    assert line6["kernels"] == 0
    # the 80 µs synchronize, and the 10 µs call of the copy from pageable memory, which waits too
    assert line6["sync_ms"] == pytest.approx(0.09)


def test_kernels_launched_from_the_autograd_thread_go_to_the_line_running_backward(tmp_path: Path) -> None:
    run = run_folder(tmp_path, build())
    line7 = by_line(analyze([run / "trace.json"]), tmp_path / "ws")[("train.py", 7)]
    assert line7["gpu_ms"] == pytest.approx(0.03)
    assert line7["kernels"] == 1


@pytest.mark.parametrize("link", ["flows", "seq"])
def test_backward_work_is_attributed_to_the_forward_line(tmp_path: Path, link: str) -> None:
    run = run_folder(tmp_path, build(link=link))
    report = analyze([run / "trace.json"])
    lines = by_line(report, tmp_path / "ws")
    assert report["attribution"]["backward_link"] == ("flows" if link == "flows" else "sequence numbers")
    forward = lines[("train.py", 5)]
    assert forward["backward_ms"] == pytest.approx(0.04)
    assert forward["backward_gpu_ms"] == pytest.approx(0.03)
    # the backward line's own wall time is where the backward ran; the forward line's wall excludes it
    assert forward["wall_ms"] == 0.5
    assert lines[("train.py", 6)]["backward_ms"] == 0.0


def test_without_gpu_events_gpu_figures_are_null_not_zero(tmp_path: Path) -> None:
    run = run_folder(tmp_path, build(gpu=False))
    report = analyze([run / "trace.json"])
    assert report["gpu"] == {"observed": False, "reason": report["gpu"]["reason"]}
    assert "not observed" in report["gpu"]["reason"]
    assert len(report["lines"]) == 4 and len(report["regions"]) == 4
    assert all(r["gpu_ms"] is None and r["backward_gpu_ms"] is None for r in report["lines"])
    assert all(r["gpu_ms"] is None for r in report["regions"])
    assert any("not observed" in n for n in report["notes"])


def test_runtime_calls_without_gpu_events_say_collection_failed(tmp_path: Path) -> None:
    s = build(gpu=False)
    s.devices = [{"id": 0, "name": "NVIDIA H200"}]
    s.runtime("cudaLaunchKernel", 250, 10)
    report = analyze([s.write(tmp_path / "t.json")])
    assert report["gpu"]["observed"] is False
    assert "collection" in report["gpu"]["reason"]


def test_regions_carry_labels_and_resolved_lines(tmp_path: Path) -> None:
    s = build()
    s.region("Optimizer.step#SGD.step", 910, 20)
    run = run_folder(tmp_path, s)
    regions = {r["label"]: r for r in analyze([run / "trace.json"])["regions"]}
    assert regions["ss:f0:5"]["file"] == str(tmp_path / "ws" / "train.py")
    assert regions["ss:f0:5"]["line"] == 5
    assert regions["ss:f1:3"]["wall_ms"] == pytest.approx(0.2)
    assert regions["Optimizer.step#SGD.step"]["file"] is None
    assert regions["Optimizer.step#SGD.step"]["wall_ms"] == pytest.approx(0.01)  # 20 µs once in 2 steps
    assert "ProfilerStep#1" not in regions


def test_labels_without_a_file_table_are_regions_and_the_report_says_lines_are_unresolved(tmp_path: Path) -> None:
    report = analyze([build().write(tmp_path / "alone.json")])
    assert report["lines"] == []
    assert any(r["label"] == "ss:f0:5" and r["file"] is None and r["line"] == 5 for r in report["regions"])
    assert any("files.json" in n for n in report["notes"])


def test_the_batch_fetch_label_is_the_loop_header_line(tmp_path: Path) -> None:
    s = Synth(devices=[])
    s.step(1, 0, 1000)
    s.region("ss:f0:12:next", 10, 300)
    s.region("ss:f0:13", 400, 500)
    s.step(2, 1000, 1000)
    s.region("ss:f0:12:next", 1010, 100)
    s.region("ss:f0:13", 1400, 500)
    run = run_folder(tmp_path, s)
    lines = by_line(analyze([run / "trace.json"]), tmp_path / "ws")
    assert lines[("train.py", 12)]["wall_ms"] == pytest.approx(0.2)
    assert list(lines)[0] == ("train.py", 13)  # sorted by wall time


def test_python_frames_give_function_precision_on_the_def_line(tmp_path: Path) -> None:
    s = Synth(devices=[])
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "train.py").write_text("def train_step():\n    pass\n")
    s.step(1, 0, 1000)
    s.frame(str(ws / "train.py"), 1, "train_step", 100, 800)
    s.frame("/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", 1700, "_call_impl", 200, 300)
    s.frame("train.py", 50, "<module>", 0, 1000)
    s.step(2, 1000, 1000)
    s.frame(str(ws / "train.py"), 1, "train_step", 1100, 600)
    report = analyze([s.write(tmp_path / "t.json")], source_root=ws)
    assert [(r["file"], r["line"], r["precision"]) for r in report["lines"]] == [(str(ws / "train.py"), 1, "function")]
    assert report["lines"][0]["wall_ms"] == pytest.approx(0.7)


def test_shortened_frame_paths_resolve_to_a_unique_file_under_the_source_root(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "pkg" / "models").mkdir(parents=True)
    (ws / "scripts").mkdir()
    (ws / "scripts" / "train.py").write_text("x = 1\n")
    (ws / "pkg" / "models" / "net.py").write_text("x = 1\n")
    (ws / "pkg" / "utils.py").write_text("x = 1\n")
    (ws / "scripts" / "utils.py").write_text("x = 1\n")  # two utils.py: ambiguous
    s = Synth(devices=[])
    for k in range(2):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.frame("train.py", 10, "train_step", t + 100, 800)  # torch strips the script's folder
        s.frame("models/net.py", 3, "forward", t + 200, 300)  # stripped down to a package path
        s.frame("utils.py", 1, "helper", t + 600, 100)
        s.frame("torch/nn/modules/module.py", 1700, "_call_impl", t + 210, 280)
    report = analyze([s.write(tmp_path / "t.json")], source_root=ws)
    found = {(Path(r["file"]).relative_to(ws).as_posix(), r["line"]) for r in report["lines"]}
    assert found == {("scripts/train.py", 10), ("pkg/models/net.py", 3)}
    assert all(r["precision"] == "function" for r in report["lines"])


@pytest.mark.parametrize("scenario, words", [
    ({"options": {"cpu_only": True}}, "--cpu-only"),
    ({"activities": ["CPU"]}, "only CPU activities"),
])
def test_the_run_record_says_why_gpu_time_was_not_observed(tmp_path: Path, scenario: dict, words: str) -> None:
    run = run_folder(tmp_path, build(gpu=False), scenario=scenario)
    report = analyze([run / "trace.json"])
    assert report["gpu"]["observed"] is False and words in report["gpu"]["reason"]


def test_a_line_lists_the_operators_it_called_and_the_kernels_it_launched(tmp_path: Path) -> None:
    """The hover's lists: outermost operators by name (nested ones are their implementation), the
    autograd thread's work on the line the step's thread runs then, kernels by the line that launched
    them, each with calls per step and the union of their time per step."""
    s = build()
    for k in range(2):
        t = k * 1000
        s.op("aten::addmm", t + 130, 20)  # inside aten::linear: its implementation, never listed beside it
        s.op("aten::mul", t + 610, 5)
        s.op("aten::mul", t + 620, 5)
    run = run_folder(tmp_path, s)
    lines = by_line(analyze([run / "trace.json"]), tmp_path / "ws")
    outer, copy_line, backward = lines[("train.py", 5)], lines[("train.py", 6)], lines[("train.py", 7)]
    assert outer["top_ops"] == [{"name": "aten::linear", "calls": 1.0, "ms": 0.06}]
    assert copy_line["top_ops"] == [{"name": "aten::mul", "calls": 2.0, "ms": 0.01}]
    assert backward["top_ops"] == [{"name": "autograd::engine::evaluate_function: AddmmBackward0", "calls": 1.0,
                                    "ms": 0.04}]
    # two kernels of one name, overlapping on two streams: launched twice a step, 140 µs of union
    assert outer["top_kernels"] == [{"name": "void gemm_kernel<float>()", "calls": 2.0, "ms": 0.14}]
    assert copy_line["top_kernels"] == []  # a copy is no kernel (the copies say it)
    assert lines[("model/net.py", 3)]["top_kernels"] == [{"name": "void gemm_kernel<float>()", "calls": 2.0,
                                                          "ms": 0.14}]


def test_without_gpu_events_a_line_has_no_kernel_list_rather_than_an_empty_one(tmp_path: Path) -> None:
    run = run_folder(tmp_path, build(gpu=False))
    lines = by_line(analyze([run / "trace.json"]), tmp_path / "ws")
    assert all(r["top_kernels"] is None for r in lines.values())
    assert lines[("train.py", 5)]["top_ops"][0]["name"] == "aten::linear"


@pytest.mark.parametrize("at", ["start", "end"])
def test_a_launch_exactly_at_a_lines_bounds_belongs_to_the_line(tmp_path: Path, at: str) -> None:
    # the line ss:f0:5 spans [100, 600] of each step; its launch call starts exactly on a bound
    s = Synth()
    for k in range(2):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.region("ss:f0:5", t + 100, 500)
        s.launch(t + (100 if at == "start" else 600), t + 650, 100)  # the kernel runs [650, 750]
    run = run_folder(tmp_path, s)
    line = by_line(analyze([run / "trace.json"]), tmp_path / "ws")[("train.py", 5)]
    assert line["kernels"] == 1 and line["gpu_ms"] == 0.1
