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

from tests import corpus

from ..analysis.report_schema import REPORT_SCHEMA

# beside the first set (tests/corpus.py says where, and how to point elsewhere); a user's clone has none
CORPUS = corpus.PUBLIC.parent / "public2"
PRESENT = not corpus.HIDDEN and CORPUS.is_dir()
REASON = ("second public trace corpus hidden (STEPSCOPE_TEST_TRACES is empty)" if corpus.HIDDEN else
          f"second public trace corpus not present at {CORPUS} (set STEPSCOPE_TEST_TRACES to the folder holding "
          "public2/)")
FILES = sorted(CORPUS.rglob("*.json*")) if PRESENT else []
# without the corpus, one case stands for the missing ones, skipped with the reason
PARAMS = [pytest.param(p, id=str(p.relative_to(CORPUS))) for p in FILES] or \
    [pytest.param(None, id="public2-corpus", marks=pytest.mark.skip(reason=REASON))]
RANKS = CORPUS / "param_dlrm_8rank"

pytestmark = pytest.mark.skipif(not PRESENT, reason=REASON)


@pytest.mark.parametrize("path", PARAMS)
def test_every_trace_analyses(path: Path) -> None:
    report = analyze([path])
    jsonschema.validate(report, REPORT_SCHEMA)
    assert report["window"]["events"] > 0
    assert (report["ms_per_step"] is None) == (report["steps"] == [])
    assert all(line.isprintable() for line in render_text(report).split("\n"))


@pytest.mark.parametrize("path", PARAMS)
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
