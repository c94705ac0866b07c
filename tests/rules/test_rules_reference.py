"""The guide's reference example is clean; the project's example has exactly its planted sync."""

from __future__ import annotations

from pathlib import Path

from stepscope.rules import Config, check_source
from stepscope.source import choose_step

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
REFERENCE = HERE / "data" / "guide_reference.py"


def test_guide_reference_example_has_no_diagnostic_even_with_every_rule():
    text = REFERENCE.read_text(encoding="utf-8")
    assert check_source(text, str(REFERENCE), Config(select=("SS",)), strict=True) == []


def test_guide_reference_step_is_the_four_step_loop():
    text = REFERENCE.read_text(encoding="utf-8")
    step = choose_step(text)
    assert text.splitlines()[step.line - 1].strip() == "for _ in range(4):"
    assert step.header_fetch is False  # the batch read is the labelled next(iterator)


def test_project_example_gets_exactly_one_sync_on_loss_item():
    path = REPO / "examples" / "train_cpu.py"
    text = path.read_text(encoding="utf-8")
    for config in (None, Config(select=("SS",))):
        diags = check_source(text, str(path), config, strict=True)
        assert [d.code for d in diags] == ["SS101"]
        d = diags[0]
        line = text.splitlines()[d.line - 1]
        assert line[d.col:d.end_col] == "loss.item()"
        assert (d.line, d.end_line) == (d.line, d.line)
        assert d.url.endswith("docs/rules/SS101.md") and d.severity == "warning"
