"""Shared helpers of the findings tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.analysis.report import analyze

from .scenario_data import REPO, load_run


def kinds(report: dict) -> list[str]:
    return [f["kind"] for f in report["findings"]]


def line_of(script: str, needle: str) -> int:
    """The code line of examples/scenarios/<script> that contains `needle` (exactly one; docstrings aside)."""
    text = (REPO / "examples" / "scenarios" / script).read_text().splitlines()
    hits = [n for n, line in enumerate(text, 1) if needle in line and line.startswith("    ")]
    assert len(hits) == 1, f"{needle!r} found {len(hits)} times in {script}"
    return hits[0]


@pytest.fixture
def scenario_report(tmp_path: Path):
    def load(name: str) -> dict:
        run = load_run(name, tmp_path)
        # a trace recorded outside Stepscope has no file table: its frames resolve under the repository
        return analyze([run], source_root=None if (run / "files.json").exists() else REPO)
    return load
