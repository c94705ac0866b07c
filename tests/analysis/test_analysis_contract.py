"""Every report, from every kind of trace, has the contract's shape (checked with JSON Schema)."""

from __future__ import annotations

import shutil
from pathlib import Path

import jsonschema
import orjson
import pytest

from .report_schema import REPORT_SCHEMA
from .test_analysis_attribution import build
from .kineto_synth import run_folder
from stepscope.analysis.report import analyze
from stepscope.jsonio import dumps
from tests import corpus

DATA = Path(__file__).resolve().parent.parent / "data" / "traces"
# shared/ lies beside the project root (the team's checkout and CI); a user's clone has none
CORPUS = corpus.PUBLIC


def check(report: dict) -> None:
    # through JSON and back, as a client receives it
    jsonschema.validate(orjson.loads(dumps(report)), REPORT_SCHEMA)


@pytest.mark.parametrize("gpu", [True, False])
def test_synthetic_reports_have_the_contract_shape(tmp_path: Path, gpu: bool) -> None:
    report = analyze([run_folder(tmp_path, build(gpu=gpu)) / "trace.json"])
    assert report["lines"] and report["regions"] and report["findings"]
    check(report)


@pytest.mark.parametrize("name", ["sync", "async"])
def test_h200_reports_have_the_contract_shape(tmp_path: Path, name: str) -> None:
    shutil.copytree(DATA / f"h200_{name}", tmp_path / name)
    check(analyze([tmp_path / name]))


@corpus.needs_public
@pytest.mark.parametrize("rel", [
    "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "hta/cpu_only_v1/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "kineto/tb_plugin_samples/resnet50_num_workers_4/worker0.pt.trace.json.gz",
    "hta/trace_filter",
])
def test_public_trace_reports_have_the_contract_shape(rel: str) -> None:
    check(analyze([CORPUS / rel]))
