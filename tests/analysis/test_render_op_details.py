"""The text report shows each top line's op inputs and memory when `--shapes`/`--memory` recorded
them, and nothing when they were not recorded (reports made in the test, in analyze()'s shape)."""

from __future__ import annotations

from stepscope.analysis.render import MAX_DETAIL_LINES, render_text


def _line(line: int, wall: float, **extra) -> dict:
    row = {"file": "/ws/train.py", "line": line, "precision": "exact", "wall_ms": wall, "cpu_self_ms": wall,
           "cpu_total_ms": wall, "gpu_ms": None, "backward_ms": 0.0, "kernels": 0,
           "copies": {}, "sync_ms": 0.0, "shapes": None, "alloc_bytes": None, "peak_bytes": None,
           "memory_device": None}
    row.update(extra)
    return row


def _report(lines: list[dict], ms_per_step: float | None = 10.0) -> dict:
    return {"ms_per_step": ms_per_step, "steps": [{"name": "ProfilerStep#1", "ms": 10.0}] if ms_per_step else [],
            "machine": {"device": "CPU only"}, "gpu": {"observed": False, "reason": "CPU-only trace"},
            "source_root": "/ws", "lines": lines, "regions": [], "findings": [], "notes": [],
            "window": {"ms": 10.0}}


def _section(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("inputs and memory of the top lines"))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


LINEAR = {"op": "aten::linear", "shapes": [[64, 768], [512, 768], [512]], "types": ["float"] * 3,
          "calls": 1.0, "ms": 0.7304}
POOL = {"op": "aten::avg_pool2d", "shapes": [[3, 72, 72], [], [], [], [], [], []],
        "types": ["float", "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", ""], "calls": 128.0, "ms": 52.7}
RAND = {"op": "aten::rand", "shapes": [[], [], []], "types": ["ScalarList", "", ""], "calls": 64.0, "ms": 4.73}
CAT = {"op": "aten::cat", "shapes": [[[2, 3], [2, 3]], []], "types": ["TensorList", "Scalar"], "calls": 0.5, "ms": 0.01}
LOSS_BWD = {"op": "NllLossBackward0", "shapes": [[]], "types": ["float"], "calls": 1.0, "ms": 0.02}


def test_shapes_and_memory_are_shown_under_each_top_line() -> None:
    text = render_text(_report([
        _line(69, 78.5, shapes=[POOL, RAND], alloc_bytes=12337664, peak_bytes=3239468, memory_device="host"),
        _line(71, 1.5, shapes=[LINEAR, CAT, LOSS_BWD], alloc_bytes=526848, peak_bytes=592900, memory_device="host"),
        _line(75, 0.02, shapes=[], alloc_bytes=0, peak_bytes=2845740, memory_device="host"),
    ]))
    section = _section(text)
    assert section[0] == ("inputs and memory of the top lines (op [tensor input shapes] ×calls, ms per step; "
                          "host memory allocated per step while the line ran, peak level):")
    rows = [" ".join(line.split()) for line in section[1:]]
    assert rows == [
        "train.py:69 alloc 11.77 MiB, peak 3.09 MiB",
        "aten::avg_pool2d [3, 72, 72] ×128 52.700 ms",  # scalar arguments are not inputs with a shape
        "aten::rand ×64 4.730 ms",                     # no tensor input at all
        "train.py:71 alloc 514.50 KiB, peak 579.00 KiB",
        "aten::linear [64, 768], [512, 768], [512] ×1 0.730 ms",
        "aten::cat [[2, 3], [2, 3]] ×0.5 0.010 ms",       # a tensor list; half the steps called it
        "NllLossBackward0 [] ×1 0.020 ms",             # a 0-dim tensor
        "train.py:75 alloc 0 B, peak 2.71 MiB",        # recorded nothing allocated: 0, not omitted
    ]
    assert text.index("per line, per step") < text.index("inputs and memory")  # under the per-line table


def test_only_what_was_recorded_is_shown() -> None:
    shapes_only = _section(render_text(_report([_line(3, 2.0, shapes=[LINEAR])])))
    assert shapes_only[0] == "inputs and memory of the top lines (op [tensor input shapes] ×calls, ms per step):"
    assert [" ".join(line.split()) for line in shapes_only[1:]] == [
        "train.py:3", "aten::linear [64, 768], [512, 768], [512] ×1 0.730 ms"]

    memory_only = _section(render_text(_report([_line(4, 2.0, alloc_bytes=4 << 20, peak_bytes=5 << 30,
                                                      memory_device="accelerator")], ms_per_step=None)))
    assert memory_only == [
        "inputs and memory of the top lines (accelerator memory allocated per window while the line ran, peak level):",
        "  train.py:4                               alloc 4.00 MiB, peak 5.00 GiB"]

    neither = render_text(_report([_line(3, 2.0), _line(4, 1.0)]))
    assert "inputs and memory" not in neither and "alloc" not in neither


def test_at_most_the_top_lines_are_detailed_in_table_order() -> None:
    lines = [_line(10 + i, 100.0 - i, shapes=[LINEAR]) for i in range(MAX_DETAIL_LINES + 4)]
    section = _section(render_text(_report(lines)))
    headers = [line.strip() for line in section[1:] if not line.startswith("      ")]
    assert headers == [f"train.py:{10 + i}" for i in range(MAX_DETAIL_LINES)]
