"""Input shapes and memory in words (`--shapes` / `--memory`): one writing of a shape list and of a
line's memory figures, for the hover and the CLI text (the panel's `inputShapesText` and `fmtBytes`
take the same cases in panel/test/logic.test.ts)."""

from __future__ import annotations

import pytest

from stepscope.analysis import present

#: (dims, types) as torch records them -> the text every surface shows
SHAPE_CASES = [
    (([[256, 512], [512]], ["float", "float"]), "[256, 512], [512]"),
    (([[3, 72, 72], [], [], [], [], [], []], ["float", "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", ""]),
     "[3, 72, 72]"),  # scalars and lists of scalars are no tensor inputs
    (([[], [], []], ["ScalarList", "", ""]), ""),  # no tensor input at all
    (([[]], ["float"]), "[]"),  # a 0-dim tensor
    (([[[2, 3], [2, 3]], []], ["TensorList", "Scalar"]), "[[2, 3], [2, 3]]"),  # a tensor list
    (([[8, 32], []], None), "[8, 32]"),  # no types recorded: an input without dims is not a tensor
    (([], []), ""),
    ((None, None), ""),
]


@pytest.mark.parametrize(("recorded", "text"), SHAPE_CASES)
def test_input_shapes_are_written_as_lists_of_dims(recorded: tuple, text: str) -> None:
    assert present.input_shapes_text(*recorded) == text


@pytest.mark.parametrize(("n", "text"), [
    (0, "0 B"), (512, "512 B"), (1024, "1.00 KiB"), (4 << 20, "4.00 MiB"), (12337664, "11.77 MiB"),
    (5 << 30, "5.00 GiB"), (None, "n/o"),
])
def test_bytes_are_said_in_binary_units(n: int | None, text: str) -> None:
    assert present.bytes_text(n) == text


REPORT = {"ms_per_step": 10.0, "steps": [{"name": "ProfilerStep#1", "ms": 10.0}], "window": {"ms": 10.0, "mean_step_ms": 10.0},
          "machine": {"device": "CPU only"}}
LINE = {"file": "/ws/train.py", "line": 4, "precision": "exact", "wall_ms": 2.0, "cpu_self_ms": 2.0,
        "cpu_total_ms": 2.0, "gpu_ms": None, "backward_ms": None, "kernels": 0, "sync_ms": 0.0,
        "copies": {}, "shapes": None, "alloc_bytes": None, "peak_bytes": None, "memory_device": None}


def test_a_line_s_memory_is_said_where_recorded_and_nowhere_otherwise() -> None:
    recorded = {**LINE, "alloc_bytes": 4 << 20, "peak_bytes": 3 << 30, "memory_device": "accelerator"}
    words = present.memory_words(recorded, REPORT)
    assert words == ("4.00 MiB allocated per step while it ran (frees not subtracted); "
                     "peak 3.00 GiB of accelerator memory in use while it ran")
    hover = present.line_hover(recorded, {**REPORT, "lines": [recorded]})
    assert f"- memory: {words}" in hover
    # recorded, and nothing allocated: 0 B, said (a figure, not a gap)
    nothing = {**LINE, "alloc_bytes": 0, "peak_bytes": 1 << 20, "memory_device": "host"}
    assert present.memory_words(nothing, REPORT).startswith("0 B allocated per step")
    # not recorded: no memory row at all (never 0, and no per-line "not recorded" noise)
    assert present.memory_words(LINE, REPORT) is None
    assert "memory" not in present.line_hover(LINE, {**REPORT, "lines": [LINE]})
    assert present.memory_recorded({"lines": [LINE, nothing]}) and not present.memory_recorded({"lines": [LINE]})


def test_the_hover_lists_a_line_s_ops_by_input_shapes() -> None:
    linear = {"op": "aten::linear", "shapes": [[64, 768], [512, 768], [512]], "types": ["float"] * 3,
              "calls": 1.0, "ms": 0.7304}
    rand = {"op": "aten::rand", "shapes": [[], [], []], "types": ["ScalarList", "", ""], "calls": 0.5, "ms": 0.01}
    line = {**LINE, "shapes": [linear, rand]}
    hover = present.line_hover(line, {**REPORT, "lines": [line]})
    assert "**Input shapes** (calls per step × time per step, by operator and input shapes):" in hover
    rows = [r.replace("\\", "") for r in hover.splitlines() if r.startswith("- `aten::")]
    assert rows == ["- `aten::linear` [64, 768], [512, 768], [512] ×1 · 0.73 ms",
                    "- `aten::rand` — ×0.50 · 0.01 ms"]
    assert '"shapes"' not in hover and "[[" not in hover  # never the recorded JSON
    # not recorded (null) or no op with recorded inputs: no section
    assert "Input shapes" not in present.line_hover(LINE, {**REPORT, "lines": [LINE]})
    assert "Input shapes" not in present.line_hover({**LINE, "shapes": []}, REPORT)
