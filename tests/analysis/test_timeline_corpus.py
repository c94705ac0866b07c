"""Every trace of the public corpora and of the test data gets a timeline that keeps its invariants."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from stepscope.analysis.links import build_links
from stepscope.analysis.panel import timeline_document
from stepscope.analysis.report import analyze
from stepscope.analysis.steps import find_steps, gpu_marker_steps, whole_window
from stepscope.analysis.timeline import MIN_CAP, build_spans, summarize
from stepscope.errors import NotATraceError
from stepscope.trace import read_trace

from ..corpus import DATA, SHARED, corpus_files, params
from .test_timeline import SCHEMA_DOC, check_summary

FILES = corpus_files()
DATA_TRACES = sorted(DATA.rglob("trace.json.gz"))


def steps_of(trace):
    links = build_links(trace)
    steps = find_steps(trace, links) or (gpu_marker_steps(trace, links) if links.gpu_step_rows else [])
    per = "step"
    if not steps:
        window = whole_window(trace, links)
        steps, per = ([window] if window else []), "window"
    return links, steps, per


def check(path: Path) -> None:
    try:
        trace = read_trace(path)
        analyze([path])  # what the analysis refuses, the timeline is never asked for
    except NotATraceError:
        return
    links, steps, per = steps_of(trace)
    doc = timeline_document(trace, links, steps, per=per, file_table=None, source_root=None)
    jsonschema.validate(doc, SCHEMA_DOC)
    table = build_spans(trace, links, steps, per=per)
    check_summary(table, doc, doc["cap"])
    check_summary(table, summarize(table, cap=MIN_CAP), MIN_CAP)
    for step in doc["breakdown"]["steps"]:
        assert sum(v for v in step["parts"].values() if v is not None) == pytest.approx(step["ms"], abs=1e-3)
    check_by_shapes(doc["operators"])


def check_by_shapes(operators: dict) -> None:
    """Where shapes were recorded, an operator's rows by input shapes add up to its own row (rounded
    figures: a few 1e-4 ms each); a row never holds more calls than its operator."""
    by_shapes = operators.get("by_shapes")
    if by_shapes is None:
        assert all(r["shapes"] is None for r in operators["rows"])
        return
    if operators["left_out"] or by_shapes["left_out"]:
        return  # a bounded table: a name's rows may be among those left out
    for op in operators["rows"]:
        mine = [r for r in by_shapes["rows"] if r["name"] == op["name"]]
        slack = 1e-4 * (len(mine) + 1)
        assert sum(r["calls"] for r in mine) == pytest.approx(op["calls"], abs=0.01 * (len(mine) + 1))
        assert sum(r["self_ms"] for r in mine) == pytest.approx(op["self_ms"], abs=slack)
        assert sum(r["total_ms"] for r in mine) == pytest.approx(op["total_ms"], abs=slack)


@pytest.mark.parametrize("path", params(FILES, ids=lambda p: str(p.relative_to(SHARED))))
def test_public_traces(path: Path) -> None:
    check(path)


@pytest.mark.parametrize("path", DATA_TRACES, ids=lambda p: p.parent.name)
def test_test_data_traces(path: Path) -> None:
    check(path)
