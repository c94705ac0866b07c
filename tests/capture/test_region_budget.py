"""Stepscope's own regions stay cheap: a workspace function called so often that labelling its
statements would open hundreds of regions a step is left whole, and the report says so. The
decision is made from counts in the step before the window, never from timings, so the same code
gets the same lines under any load. (Real CPU torch runs.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..conftest import run_stepscope

pytestmark = pytest.mark.torch

PROGRAM = """\
import torch
from torch.utils.data import DataLoader, Dataset


class Items(Dataset):
    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        x = torch.full((4,), float(i % 7))
        y = i % 3
        return x, y


def main():
    model = torch.nn.Linear(4, 3)
    loader = DataLoader(Items(), batch_size=BATCH)
    for x, y in loader:
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out, y) + WORK
        loss.backward()


main()
"""
GETITEM_DEF, GETITEM_BODY, LOOP = 9, range(10, 13), 18


def _profile(ws: Path, batch: int, work: str, *options: str) -> dict:
    (ws / "items.py").write_text(PROGRAM.replace("BATCH", str(batch)).replace("WORK", work))
    r = run_stepscope("profile", "items.py", "--json", *options, cwd=ws)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_a_function_called_per_sample_is_left_whole_and_the_report_says_why(tmp_path: Path):
    report = _profile(tmp_path, 512, "0")
    lines = {entry["line"] for entry in report["lines"]}
    assert LOOP in lines and not lines & set(GETITEM_BODY)
    record = report["scenario"]["observed"]["lines_not_split"]
    assert [(f["function"].rsplit(":", 1)[1], f["calls_per_step"], f["regions_per_step"]) for f in record["functions"]] \
        == [(str(GETITEM_DEF), 512, 3 * 512)]
    note = next(n for n in report["notes"] if "not split into lines" in n)
    assert f"items.py:{GETITEM_DEF} runs 512 times per step" in note and "stays on the line that calls it" in note
    assert "1536 regions per step" in note and "decided from counts" in note
    assert not any(f["kind"] == "missing-label" for f in report["findings"])


def test_a_function_called_once_per_step_keeps_its_lines(tmp_path: Path):
    # one item per step and a step that does real work: the items' three regions cost nothing
    work = "(torch.randn(384, 384) @ torch.randn(384, 384)).sum() * 0"
    report = _profile(tmp_path, 1, work)
    lines = {entry["line"] for entry in report["lines"]}
    assert set(GETITEM_BODY) <= lines
    assert "lines_not_split" not in report["scenario"]["observed"]
    assert not any("not split into lines" in n for n in report["notes"])


def test_a_hot_function_with_few_regions_keeps_its_lines_however_short_the_step(tmp_path: Path):
    # 40 calls a step but 120 regions: below the count that leaves a function whole, in a step of
    # almost nothing (a timing-based budget would leave it whole here, and not on a slower machine)
    report = _profile(tmp_path, 40, "0")
    lines = {entry["line"] for entry in report["lines"]}
    assert set(GETITEM_BODY) <= lines
    assert "lines_not_split" not in report["scenario"]["observed"]


def test_all_lines_splits_every_function_whatever_it_costs(tmp_path: Path):
    report = _profile(tmp_path, 512, "0", "--all-lines")
    lines = {entry["line"] for entry in report["lines"]}
    assert set(GETITEM_BODY) <= lines
    assert "lines_not_split" not in report["scenario"]["observed"]
