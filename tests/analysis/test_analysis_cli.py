"""`stepscope analyze` as a user runs it: one JSON document with --json, one-line errors, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from .kineto_synth import Synth, run_folder
from .report_schema import REPORT_SCHEMA


def stepscope(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stepscope", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def two_step_run(tmp: Path) -> Path:
    s = Synth()
    for k in range(2):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.region("ss:f0:5", t + 100, 500)
        s.launch(t + 200, t + 300, 400)
    return run_folder(tmp, s)


REQUIRED = {"traces", "machine", "scenario", "schedule", "gpu", "startup", "steps", "ms_per_step",
            "samples_per_s", "lines", "regions", "findings"}
LINE_FIELDS = {"file", "line", "precision", "wall_ms", "cpu_self_ms", "cpu_total_ms", "gpu_ms", "backward_ms",
               "kernels", "copies", "sync_ms"}


def test_json_output_is_one_document_in_the_contract_shape(tmp_path: Path) -> None:
    run = two_step_run(tmp_path)
    proc = stepscope("analyze", str(run), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)  # fails if anything else is on stdout
    assert REQUIRED <= set(report)
    assert report["ms_per_step"] == 1.0
    line = report["lines"][0]
    assert LINE_FIELDS <= set(line)
    assert line["file"] == str(tmp_path / "ws" / "train.py") and line["line"] == 5
    assert line["gpu_ms"] == 0.4 and line["kernels"] == 1
    assert set(line["copies"]) == {"h2d", "d2h", "d2d"}
    assert report["traces"] == [str(run / "trace.json")]


def test_text_output_has_the_headline_and_the_table(tmp_path: Path) -> None:
    run = two_step_run(tmp_path)
    proc = stepscope("analyze", str(run / "trace.json"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("1.000 ms/step")
    assert "NVIDIA H200" in proc.stdout.splitlines()[1]
    assert "train.py:5" in proc.stdout


@pytest.mark.parametrize("name, content, reason", [
    ("missing.json", None, "no such file"),
    ("empty.json", b"", "empty file"),
    ("text.json", b"not json at all", "not JSON"),
    ("config.json", b'{"lr": 0.1}', "not a profiler trace"),
    ("cut.json", b'{"traceEvents": [{"ph": "X", "name": "ProfilerStep#1", "ts": 1, "dur": 5}, {"ph"', "truncated"),
    ("notime.json", b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 0}]}', "spans no time"),
    ("gz.json.gz", b"\x1f\x8b\x08\x00garbage", "compressed file"),
])
def test_bad_input_exits_2_with_one_line_and_no_traceback(tmp_path: Path, name: str, content: bytes | None, reason: str) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    for extra in ([], ["--json"]):
        proc = stepscope("analyze", str(path), *extra, cwd=tmp_path)
        assert proc.returncode == 2
        assert proc.stdout == ""
        assert "Traceback" not in proc.stderr
        assert proc.stderr.count("\n") == 1 and reason in proc.stderr, proc.stderr


def test_a_folder_without_traces_and_a_bad_source_root_are_usage_errors(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    proc = stepscope("analyze", str(tmp_path / "empty"), cwd=tmp_path)
    assert proc.returncode == 2 and "no trace" in proc.stderr
    run = two_step_run(tmp_path)
    proc = stepscope("analyze", str(run), "--source-root", str(tmp_path / "nowhere"), cwd=tmp_path)
    assert proc.returncode == 2 and "--source-root" in proc.stderr


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero and /dev/null")
def test_devices_instead_of_files_are_refused_without_a_traceback(tmp_path: Path) -> None:
    for device, reason in (("/dev/null", "empty file"), ("/dev/zero", "not JSON")):
        proc = stepscope("analyze", device, cwd=tmp_path)
        assert proc.returncode == 2 and reason in proc.stderr and "Traceback" not in proc.stderr


def test_a_minimal_trace_without_categories_still_has_its_step(tmp_path: Path) -> None:
    path = tmp_path / "minimal.json"
    path.write_text('{"traceEvents": [{"ph": "X", "name": "ProfilerStep#1", "ts": 10, "dur": 2500, "pid": 1, "tid": 1}]}')
    proc = stepscope("analyze", str(path), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["steps"] == [{"name": "ProfilerStep#1", "ms": 2.5, "cpu_ms": 2.5}]


def test_a_trace_without_step_markers_is_analysed_as_one_window(tmp_path: Path) -> None:
    path = tmp_path / "nosteps.json"
    path.write_bytes(b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 5}]}')
    proc = stepscope("analyze", str(path), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["steps"] == [] and report["ms_per_step"] is None and report["window"]["ms"] == 0.005
    jsonschema.validate(report, REPORT_SCHEMA)
    text = stepscope("analyze", str(path), cwd=tmp_path)
    assert text.returncode == 0
    assert text.stdout.startswith("no step markers (ProfilerStep#N): one window of 0.005 ms, no ms/step")
    assert "ms/step (median" not in text.stdout


def test_a_folder_of_ranks_without_step_markers_renders_as_text(tmp_path: Path) -> None:
    folder = tmp_path / "ranks"
    for rank in (0, 1):
        s = Synth(devices=[])
        s.metadata = {"distributedInfo": {"rank": rank, "world_size": 2}}
        s.op("aten::mm", 0, 1000 * (rank + 1))
        s.write(folder / f"rank{rank}.json")
    proc = stepscope("analyze", str(folder), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("no step markers (ProfilerStep#N): one window of 1.000 ms, no ms/step")
    # without step markers the ranks are compared by their windows; rank 1's is the longer one
    table = proc.stdout.split("ranks (2 traces; the figures below are rank 0's):\n", 1)[1].splitlines()
    assert table[0].split() == ["rank", "window", "ms", "steps", "gpu", "ms", "comm", "ms"]
    assert table[1].split() == ["0", "1.000", "0", "n/o", "n/o"]
    assert table[2].split() == ["1", "2.000", "0", "n/o", "n/o", "<-", "slowest"]
