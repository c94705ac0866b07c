"""The typed report model: its shipped schema, its validation, its file table and version upgrade."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import jsonschema
import orjson
import pytest

from stepscope.analysis import model
from stepscope.analysis.report import analyze
from stepscope.jsonio import dumps, write_json

from .kineto_synth import run_folder
from .report_schema import REPORT_SCHEMA
from .test_analysis_attribution import build

DATA = Path(__file__).resolve().parent.parent / "data" / "traces"


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> list[dict]:
    """Reports of several kinds of trace: Stepscope runs (CPU, GPU), a synthetic one, per-rank folders."""
    tmp = tmp_path_factory.mktemp("reports")
    made = [analyze([run_folder(tmp / "synth", build(gpu=True)) / "trace.json"])]
    for name in ("h200_async", "scenarios/input_bound", "scenarios/gpu_repeated_copy", "scenarios/missing_label"):
        shutil.copytree(DATA / name, tmp / name)
        made.append(analyze([tmp / name]))
    return [orjson.loads(dumps(r)) for r in made]  # as a client receives them


def test_the_shipped_schema_is_the_one_the_types_generate() -> None:
    shipped = json.loads(model.SCHEMA_FILE.read_text())
    assert shipped == model.json_schema(), \
        "report.schema.json is stale: python -m stepscope.analysis.model > server/stepscope/analysis/report.schema.json"
    assert shipped is not REPORT_SCHEMA and shipped == REPORT_SCHEMA  # the tests read the shipped file


def test_every_report_is_versioned_and_valid_by_both_the_types_and_the_schema(reports: list[dict]) -> None:
    for report in reports:
        assert next(iter(report)) == "schema_version" and report["schema_version"] == model.SCHEMA_VERSION
        assert model.validate(report) is report
        jsonschema.validate(report, REPORT_SCHEMA)


def _located(value):
    if isinstance(value, dict):
        if "file" in value and "line" in value:
            yield value
        for item in value.values():
            yield from _located(item)
    elif isinstance(value, list):
        for item in value:
            yield from _located(item)


def test_the_file_table_names_every_file_once_and_each_id_points_back_at_its_file(reports: list[dict]) -> None:
    pointed = 0
    for report in reports:
        files = report["files"]
        assert len({f["path"] for f in files}) == len(files)
        root = report["source_root"]
        for key, value in report.items():
            if key in ("scenario", "machine", "files"):
                continue
            for item in _located(value):
                if item["file"] is None:
                    assert item["file_id"] is None
                    continue
                entry = files[item["file_id"]]
                path = f"{root}/{entry['path']}" if entry["in_root"] else entry["path"]
                assert path == item["file"]
                pointed += 1
        assert not any(f["in_root"] and f["path"].startswith("/") for f in files), (files, root)
    assert pointed > 20  # lines, regions, findings and evidence of several reports were checked


def test_a_run_s_files_are_workspace_relative() -> None:
    assert model.relative_path("/ws/model/net.py", "/ws") == {"path": "model/net.py", "in_root": True}
    assert model.relative_path("/ws2/net.py", "/ws") == {"path": "/ws2/net.py", "in_root": False}
    assert model.relative_path("/usr/lib/torch/nn.py", None) == {"path": "/usr/lib/torch/nn.py", "in_root": False}


@pytest.mark.parametrize(("spoil", "said"), [
    (lambda r: r["lines"][0].update(wall_ms=-1.0), "$.lines[0].wall_ms: Expected `float` >= 0.0"),
    (lambda r: r.pop("ms_per_step"), "missing required field `ms_per_step`"),
    (lambda r: r["lines"][0].update(precision="roughly"), "$.lines[0].precision"),
    (lambda r: r["traces"].clear(), "$.traces"),
    (lambda r: r["gpu"].update(observed="yes"), "$.gpu.observed: Expected `bool`"),
])
def test_a_report_that_breaks_the_model_is_refused_in_one_line_naming_the_field(reports, spoil, said) -> None:
    report = copy.deepcopy(reports[0])
    spoil(report)
    with pytest.raises(model.InvalidReport) as refused:
        model.validate(report)
    assert said in str(refused.value) and "\n" not in str(refused.value)
    with pytest.raises(jsonschema.ValidationError):  # the shipped schema refuses it too
        jsonschema.validate(report, REPORT_SCHEMA)


def test_a_report_from_a_newer_stepscope_is_refused_with_what_to_do(reports) -> None:
    newer = {**reports[0], "schema_version": model.SCHEMA_VERSION + 1}
    with pytest.raises(model.InvalidReport, match="update Stepscope"):
        model.validate(newer)


def _without_model_keys(value):
    if isinstance(value, dict):
        return {k: _without_model_keys(v) for k, v in value.items() if k not in ("schema_version", "files", "file_id")}
    if isinstance(value, list):
        return [_without_model_keys(v) for v in value]
    return value


def test_a_report_written_before_versioning_reads_as_the_current_version(tmp_path: Path, reports) -> None:
    current = reports[1]
    old = _without_model_keys(current)
    write_json(tmp_path / "report.json", old)
    assert model.load_report(tmp_path / "report.json") == current
    assert list(model.load_report(tmp_path / "report.json")) == list(current)


def test_attaching_the_file_table_changes_no_figure_and_is_idempotent(reports) -> None:
    for report in reports:
        again = model.attach_files(copy.deepcopy(report))
        assert again == report and list(again) == list(report)
        assert _without_model_keys(again) == _without_model_keys(report)


def test_unreadable_reports_are_one_line_errors(tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text("{not json")
    with pytest.raises(model.InvalidReport, match="report.json: not JSON"):
        model.load_report(tmp_path / "report.json")
    with pytest.raises(Exception, match="cannot read the report"):
        model.load_report(tmp_path / "absent.json")
