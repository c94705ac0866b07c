"""`stepscope profile --redact` on a real program (real torch on the CPU): a redacted copy of the
trace is written beside it at the end of the run, the original is kept, and the report and the CLI
say where the copy is and what it replaced."""

from __future__ import annotations

import gzip
import json
import textwrap
from pathlib import Path

import pytest

from stepscope.analysis.model import validate

from ..conftest import run_stepscope

pytestmark = pytest.mark.torch

SECRET = "jane.doe@example.com"
PROGRAM = f"""\
import torch

model = torch.nn.Linear(16, 16)
for i in range(12):
    with torch.profiler.record_function("{SECRET}"):
        y = model(torch.randn(4, 16)).sum()
    y.backward()
"""


def _text(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode()


def test_profile_redact_writes_the_copy_beside_the_trace(tmp_path: Path):
    (tmp_path / "train.py").write_text(textwrap.dedent(PROGRAM))
    r = run_stepscope("profile", "--json", "--redact", "train.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    validate(report)  # the shipped contract holds the new field
    trace = Path(report["traces"][0])
    [entry] = report["redacted"]
    copy = Path(entry["copy"])
    assert entry["trace"] == str(trace) and entry["problem"] is None
    assert copy.parent == trace.parent and copy.name.startswith("trace.redacted.json")
    assert entry["counts"].get("email") == 1, entry
    assert SECRET in _text(trace) and SECRET not in _text(copy)  # the original is kept as it was
    assert "<email:1>" in _text(copy)
    on_disk = json.loads((trace.parent / "report.json").read_text())
    assert on_disk["redacted"] == report["redacted"]

    # the copy is no trace of the run: analysing the run folder reads its own trace only
    r = run_stepscope("analyze", "--json", str(trace.parent), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["traces"] == [str(trace)]


def test_profile_redact_says_where_the_copy_is_in_text(tmp_path: Path):
    (tmp_path / "train.py").write_text(textwrap.dedent(PROGRAM))
    r = run_stepscope("profile", "--redact", "train.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    said = [line for line in r.stdout.splitlines() if line.startswith("redacted copy: ")]
    assert len(said) == 1 and "email" in said[0], r.stdout
    copy = Path(said[0].removeprefix("redacted copy: ").split(" (replaced")[0])
    assert copy.is_file() and SECRET not in _text(copy)


def test_without_redact_no_copy_is_written(tmp_path: Path):
    (tmp_path / "train.py").write_text(textwrap.dedent(PROGRAM))
    r = run_stepscope("profile", "--json", "train.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert "redacted" not in report
    assert not [p for p in Path(report["traces"][0]).parent.iterdir() if "redacted" in p.name]
