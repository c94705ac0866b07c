"""Findings on 1.9-era traces name the statement an operator's `Call stack` gives (precision "call").

Layout of each 1 ms step (µs from the step start), five steps; lines of train.py:
  main thread     20 `mask = torch.arange(64).to("cuda")`: aten::arange [100, 130], then aten::to
                     [140, 240] holding aten::copy_ [150, 230], which launches at 160 a 1 KB
                     host-to-device copy
                  21 `out = model(x)`: aten::addmm [250, 290] launches at 260 a kernel running [270, 560]
                  22 `loss.item()`: aten::item [300, 560] waits in cudaStreamSynchronize [310, 550]
                  24 `loss.backward()`: aten::ones_like [600, 610], then the thread records nothing
                     while it waits for the autograd thread
  autograd thread AddmmBackward [620, 700] (no stack, as 1.9 records it) launches kernels at 630 and 660
"""

from __future__ import annotations

from pathlib import Path

from stepscope.analysis.render import render_text
from stepscope.analysis.report import analyze
from tests.analysis.kineto_synth import Synth19, call_stack_1_9

AUTOGRAD = 200
statement = call_stack_1_9


def build() -> Synth19:
    s = Synth19()
    for k in range(5):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.op("aten::arange", t + 100, 30, stack=statement(20, "_tensor.py(30): wrapped"))
        s.op("aten::to", t + 140, 100, stack=statement(20, "_tensor.py(30): wrapped"))
        s.op("aten::copy_", t + 150, 80, stack=statement(20, "_tensor.py(30): wrapped"))
        s.launch(t + 160, t + 170, 5, kind="gpu_memcpy", nbytes=1024)
        s.op("aten::addmm", t + 250, 40, stack=statement(21))
        s.launch(t + 260, t + 270, 290)
        s.op("aten::item", t + 300, 260, stack=statement(22, "_tensor.py(40): item"))
        s.sync(t + 310, 240)
        s.op("aten::ones_like", t + 600, 10, stack=statement(24, "autograd/__init__.py(147): backward"))
        s.op("AddmmBackward", t + 620, 80, tid=AUTOGRAD)
        s.launch(t + 630, t + 640, 20, tid=AUTOGRAD)
        s.launch(t + 660, t + 670, 20, tid=AUTOGRAD)
    return s


def analysed(tmp_path: Path, synth: Synth19) -> tuple[dict, str]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "train.py").write_text("\n" * 30)
    report = analyze([synth.write(tmp_path / "trace.json")], source_root=ws)
    return report, str(ws / "train.py")


def only(report: dict, kind: str) -> dict:
    (f,) = [f for f in report["findings"] if f["kind"] == kind]
    return f


def test_a_constant_copied_every_step_is_a_repeated_copy_on_the_statement_its_stack_names(tmp_path: Path) -> None:
    report, train = analysed(tmp_path, build())
    f = only(report, "repeated-copy")
    assert (f["file"], f["line"]) == (train, 20)
    assert f["figures"] == {"bytes": 1024, "per_step": 1, "steps": 5, "factory": "aten::arange",
                            "host_wait_ms": 0.01}  # the 10 µs copy call from pageable memory waits
    # a call stack names the statement, so the factory is known to be in it
    assert "built in the same statement by aten::arange" in f["observation"]
    assert "comes from the operators' call stacks" in f["observation"]
    assert report["evidence"]["line_precision"] == "call"
    assert "[repeated-copy] (train.py:20) A 1.0 KB host-to-device copy" in render_text(report)


def test_a_wait_in_item_is_sync_in_step_on_its_statement(tmp_path: Path) -> None:
    report, train = analysed(tmp_path, build())
    f = only(report, "sync-in-step")
    assert (f["file"], f["line"]) == (train, 22)
    assert f["figures"]["sync_ms"] == 0.24 and f["figures"]["steps"] == 5
    assert "[sync-in-step] (train.py:22) The host waits on the device 1 time(s) per step, in 5 of 5 active steps at " \
           "train.py:22 (1 per step: cudaStreamSynchronize), for 0.240 ms per step" in render_text(report)


def test_work_of_the_autograd_thread_goes_to_the_statement_waiting_for_it(tmp_path: Path) -> None:
    # AddmmBackward and its two kernels run on a thread without stacks while line 24 waits: the
    # operator and the line launching the most kernels are line 24, as in the per-line table
    report, train = analysed(tmp_path, build())
    evidence = report["evidence"]
    kernels = evidence["kernels"]
    assert (kernels["file"], kernels["line"], kernels["precision"]) == (train, 24, "call")
    assert kernels["top_line_kernels"] == 2
    ops = {o["name"]: (o["line"], o["precision"]) for o in evidence["ops"]}
    assert ops["AddmmBackward"] == (24, "call") and ops["aten::addmm"] == (21, "call")
    lines = {r["line"]: r for r in report["lines"]}
    assert lines[24]["kernels"] == 2


def test_a_kernel_launched_before_the_steps_first_statement_names_no_line_of_the_previous_step(tmp_path: Path) -> None:
    s = build()
    s.launch(1005, 1015, 20, tid=AUTOGRAD)  # step 2, before its main thread ran anything
    report, train = analysed(tmp_path, s)
    # neither step 1's waiting statement (24) nor any other takes it: on line 24 it would read 2.2
    assert report["evidence"]["kernels"]["top_line_kernels"] == 2
    assert report["evidence"]["kernels"]["count"] == 3.2


def test_without_the_source_the_findings_say_the_stacks_name_no_file(tmp_path: Path) -> None:
    report = analyze([build().write(tmp_path / "trace.json")])  # no source root: `train.py` is nowhere
    f = only(report, "sync-in-step")
    assert f["file"] is None and report["evidence"]["call_stacks"] is True
    assert "call stacks name no file" in f["observation"] and "--source-root" in f["observation"]
