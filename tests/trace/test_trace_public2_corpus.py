"""The second set of public traces (shared/traces/public2: Ascend, IBM Spyre, DeepSeek's H800 step, MI300X,
SGLang, xDiT, 1.9-era ResNet, eight DLRM ranks) all analyse: a report in the contract's shape whose
text prints safely, through the reader's every path (compiled scanner and reference)."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from stepscope.analysis.render import render_text
from stepscope.analysis.report import analyze
from stepscope.trace import read_trace, reader

from ..analysis.report_schema import REPORT_SCHEMA

# shared/ lies beside the project root (the team's checkout and CI); a user's clone has none
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "traces" / "public2"
FILES = sorted(p for p in CORPUS.rglob("*.json*")) if CORPUS.is_dir() else []
RANKS = CORPUS / "param_dlrm_8rank"

pytestmark = pytest.mark.skipif(not FILES, reason=f"second public trace corpus not present at {CORPUS}")


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_every_trace_analyses(path: Path) -> None:
    report = analyze([path])
    jsonschema.validate(report, REPORT_SCHEMA)
    assert report["window"]["events"] > 0
    assert (report["ms_per_step"] is None) == (report["steps"] == [])
    assert all(line.isprintable() for line in render_text(report).split("\n"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_every_trace_reads_the_same_without_the_compiled_scanner(path: Path, monkeypatch) -> None:
    compiled = read_trace(path)
    monkeypatch.setattr(reader, "ColumnScanner", None)
    reference = read_trace(path, workers=1)
    assert [compiled.names[i] for i in compiled.name] == [reference.names[i] for i in reference.name]
    assert compiled.ts == reference.ts and compiled.dur == reference.dur
    assert compiled.correlation == reference.correlation and compiled.skipped == reference.skipped


def test_the_eight_dlrm_ranks_analyse_as_one_report() -> None:
    report = analyze([RANKS])
    jsonschema.validate(report, REPORT_SCHEMA)
    assert [r["rank"] for r in report["ranks"]] == list(range(8))
    assert report["gpu"]["observed"] is True
