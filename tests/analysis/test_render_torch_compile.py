"""The text report says, below its headline, whether the step ran torch.compile'd code, from the run's
scenario record (`scenario.torch_compile`, written by the agent), and says nothing without one."""

from __future__ import annotations

from pathlib import Path

import pytest

from .kineto_synth import Synth, run_folder
from stepscope.analysis.render import render_text
from stepscope.analysis.report import analyze


def three_steps() -> Synth:
    s = Synth(devices=[])
    for k in range(3):
        s.step(k + 1, k * 1000, 1000)
        s.region("ss:f0:5", k * 1000 + 10, 900)
    return s


def text_of(tmp_path: Path, torch_compile: dict | None) -> list[str]:
    scenario = {} if torch_compile is None else {"torch_compile": torch_compile}
    return render_text(analyze([run_folder(tmp_path, three_steps(), scenario=scenario) / "trace.json"])).splitlines()


def record(compiled_step: bool | None, *, objects: tuple[str, ...] = (), markers: dict | None = None,
           during: int = 0) -> dict:
    return {"compiled_step": compiled_step, "evidence": [],
            "compiled_objects": [{"name": n, "kind": "module", "type": "Sequential"} for n in objects],
            "trace_markers": markers,
            "dynamo": {"before_window": {"frames_compiled": 2}, "during_window": {"frames_compiled": during}}}


MARKERS = {"Torch-Compiled Region": 6, "TorchDynamo Cache Lookup": 6, "CompiledFunction": 3,
           "CompiledFxGraph call": 0, "triton kernel": 0}


def test_a_compiled_step_is_said_under_the_headline_with_its_regions_per_step(tmp_path: Path) -> None:
    lines = text_of(tmp_path, record(True, objects=("model",), markers=MARKERS))
    assert lines[0].startswith("1.000 ms/step") and lines[1].startswith("measured on:")
    assert lines[2] == "torch.compile: the step runs compiled code (2 compiled regions per step)"


def test_torch_2_1_counts_its_compiled_functions_and_a_compilation_in_the_window_is_said(tmp_path: Path) -> None:
    # torch 2.1 writes no `Torch-Compiled Region`; dynamo compiled a frame while the window recorded
    markers = {**MARKERS, "Torch-Compiled Region": 0, "TorchDynamo Cache Lookup": 0}
    (line,) = [x for x in text_of(tmp_path, record(True, markers=markers, during=1)) if x.startswith("torch.compile")]
    assert line == ("torch.compile: the step runs compiled code (1 compiled region per step); dynamo compiled "
                    "1 frame(s) inside the window, so its step times include compiling")


def test_compiled_objects_the_step_never_ran_are_said_in_one_line(tmp_path: Path) -> None:
    markers = {name: 0 for name in MARKERS}
    (line,) = [x for x in text_of(tmp_path, record(False, objects=("model", "scaled"), markers=markers))
               if x.startswith("torch.compile")]
    assert line == ("torch.compile: compiled objects in the step's frame (model, scaled), but the step ran no "
                    "compiled code in the window")


@pytest.mark.parametrize("torch_compile", [None, record(False, markers={}), record(None, objects=("model",)),
                                           "not a record", {"compiled_step": True, "dynamo": 3, "trace_markers": []}])
def test_nothing_is_said_without_compiled_code_and_bad_records_are_safe(tmp_path: Path, torch_compile) -> None:
    said = [x for x in text_of(tmp_path, torch_compile) if "torch.compile" in x]
    # a malformed record that still says the step ran compiled code: that much, and no figure
    assert said == ([] if not isinstance(torch_compile, dict) or torch_compile["compiled_step"] is not True
                    else ["torch.compile: the step runs compiled code"])
