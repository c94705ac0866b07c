"""The panel's operators by input shapes (`operators.by_shapes` of timeline.json): one row per operator
and recorded input shapes, only where shapes were recorded, whose figures add up to the operator's
own row (nothing counted twice, nothing made up)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from stepscope.analysis.panel import SCHEMA
from stepscope.analysis.report import analyze

from .kineto_synth import Synth, run_folder

SCHEMA_DOC = json.loads(SCHEMA.read_text())
WIDE, NARROW = [[256, 512], [1024, 512], [1024]], [[256, 1024], [1024, 1024], [1024]]


def _timeline(tmp: Path, synth: Synth) -> tuple[dict, dict]:
    run = run_folder(tmp, synth, files={"f0": "train.py"})
    timelines: dict = {}
    report = analyze([run], timelines=timelines)
    doc = json.loads(timelines[run / "trace.json"])
    jsonschema.validate(doc, SCHEMA_DOC)
    return report, doc


def shapes_trace(*, shapes: bool = True) -> Synth:
    """Four 2 ms steps: line 3 calls `aten::linear` on two input shapes (the second call holding a
    nested `aten::linear` of a third shape), line 4 `aten::relu` once."""
    s = Synth(devices=[])
    for k in range(4):
        base = k * 2000
        s.step(k + 1, base, 2000)
        s.region("ss:f0:3", base + 100, 600)
        s.op("aten::linear", base + 110, 200, dims=WIDE if shapes else None)
        s.op("aten::linear", base + 320, 100, dims=NARROW if shapes else None)
        s.op("aten::linear", base + 330, 40, dims=[[1, 2]] if shapes else None)  # inside the call before it
        s.region("ss:f0:4", base + 800, 300)
        s.op("aten::relu", base + 810, 50, dims=[[256, 1024]] if shapes else None)
    return s


def test_each_operator_and_input_shapes_is_a_row_adding_up_to_the_operator(tmp_path: Path) -> None:
    _, doc = _timeline(tmp_path, shapes_trace())
    rows = doc["operators"]["by_shapes"]["rows"]
    assert doc["operators"]["by_shapes"]["left_out"] == 0
    by = {(r["name"], r["inputs"]): r for r in rows}
    wide = by[("aten::linear", json.dumps([WIDE, ["float"] * 3], separators=(",", ":")))]
    assert (wide["calls"], wide["self_ms"], wide["total_ms"], wide["file"], wide["line"]) == (1.0, 0.2, 0.2, "f0", 3)
    narrow = by[("aten::linear", json.dumps([NARROW, ["float"] * 3], separators=(",", ":")))]
    assert (narrow["calls"], narrow["self_ms"], narrow["total_ms"]) == (1.0, 0.06, 0.1)
    nested = by[("aten::linear", '[[[1,2]],["float"]]')]
    # held by a call of the same name: its self time is its own, its total is already in its holder's
    assert (nested["calls"], nested["self_ms"], nested["total_ms"]) == (1.0, 0.04, 0.0)
    # a name's rows add up to its operator row: calls, self and total time alike
    for op in doc["operators"]["rows"]:
        mine = [r for r in rows if r["name"] == op["name"]]
        assert sum(r["calls"] for r in mine) == pytest.approx(op["calls"])
        assert sum(r["self_ms"] for r in mine) == pytest.approx(op["self_ms"])
        assert sum(r["total_ms"] for r in mine) == pytest.approx(op["total_ms"])
    assert [r["total_ms"] for r in rows] == sorted((r["total_ms"] for r in rows), reverse=True)


def test_no_rows_by_shapes_where_shapes_were_not_recorded(tmp_path: Path) -> None:
    _, doc = _timeline(tmp_path, shapes_trace(shapes=False))
    assert "by_shapes" not in doc["operators"] and doc["operators"]["rows"]
    assert all(r["shapes"] is None for r in doc["operators"]["rows"])
