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


def test_unreadable_folders_and_files_are_one_line_refusals(locked_out) -> None:
    run, folder = locked_out
    trace = json.dumps({"traceEvents": [{"ph": "X", "name": "ProfilerStep#1", "cat": "user_annotation", "pid": 1,
                                         "tid": 1, "ts": 1.0, "dur": 5.0}]})
    locked = folder / "locked"
    locked.mkdir()
    (locked / "trace.json").write_text(trace)
    (folder / "unreadable.json").write_text(trace)
    (folder / "unreadable.json").chmod(0)
    locked.chmod(0)
    for target, reason in [(locked, f"cannot read {locked}: permission denied"),
                           (locked / "trace.json", f"cannot read {locked / 'trace.json'}: permission denied"),
                           (folder / "unreadable.json", f"cannot open {folder / 'unreadable.json'}: permission denied")]:
        for flags in ([], ["--json"]):
            r = run("analyze", str(target), *flags)
            assert (r.returncode, r.stdout) == (2, ""), (target, r.stdout, r.stderr)
            assert r.stderr == f"stepscope: {reason}\n"


def _steps_trace(path: Path, **metadata) -> Path:
    events = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1,
               "ts": 1000.0 * i, "dur": 900.0} for i in (1, 2, 3)]
    path.write_text(json.dumps({**metadata, "traceEvents": events}))
    return path


@pytest.mark.parametrize("depth", [254, 300, 510])
def test_input_dims_nested_hundreds_deep_are_read_as_no_shapes(tmp_path: Path, depth: int) -> None:
    """Once a traceback (`TypeError: Recursion limit reached`): the op is read, without shapes, and a
    note says so; deeper than the reader's 512 levels the file is refused in one line."""
    dims = "[" * depth + "4" + "]" * depth
    text = _steps_trace(tmp_path / "t.json").read_text()[:-2] + (
        ', {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1010.0, "dur": 5.0, '
        '"args": {"External id": 1, "Input Dims": ' + dims + ', "Input type": ["float"]}}]}')
    (tmp_path / "t.json").write_text(text)
    r = stepscope("analyze", "t.json", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    notes = json.loads(r.stdout)["notes"]
    assert "1 operator(s) with Input Dims nested hundreds of levels deep: no shapes are shown for them" in notes


def test_machine_metadata_of_the_wrong_type_is_read_as_unknown_with_a_note(tmp_path: Path) -> None:
    from stepscope.analysis.report import analyze

    # once a traceback (TypeError: 'float' object is not iterable), through the command
    r = stepscope("analyze", str(_steps_trace(tmp_path / "n.json", deviceProperties=1.5)), "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["machine"]["devices"] == [] and "deviceProperties is 1.5, not a list of devices: no device is read " \
        "from it" in doc["notes"]
    cases = [
        (dict(deviceProperties=True), {"devices": []}, "deviceProperties is True, not a list of devices"),
        (dict(deviceProperties=[{"id": 0, "name": ""}, {"id": 1}]),
         {"devices": ["device 0 (no name)", "device 1 (no name)"], "device": "device 0 (no name)"},
         "2 device(s) listed without a name"),
        (dict(distributedInfo={"rank": 1.18e21, "world_size": 2}), {"rank": None, "world_size": 2},
         "distributedInfo.rank is 1.18e+21, not a whole number"),
        (dict(distributedInfo={"rank": "zero", "world_size": True}), {"rank": None, "world_size": None},
         "distributedInfo.rank is 'zero', not a whole number"),
        (dict(distributedInfo={"rank": 1.5, "world_size": "4"}), {"rank": None, "world_size": 4},
         "distributedInfo.rank is 1.5, not a whole number"),
    ]
    for i, (metadata, machine, note) in enumerate(cases):
        report = analyze([_steps_trace(tmp_path / f"m{i}.json", **metadata)])
        assert {k: report["machine"][k] for k in machine} == machine, metadata
        assert any(n.startswith(note) for n in report["notes"]), (metadata, report["notes"])
        assert "no device listed" not in report["gpu"]["reason"] or not machine.get("devices")


def test_ranks_claimed_twice_are_listed_by_trace_and_said(tmp_path: Path) -> None:
    folder = tmp_path / "ranks"
    folder.mkdir()
    for name, rank in (("a.json", 0), ("b.json", 0), ("c.json", 1)):
        _steps_trace(folder / name, distributedInfo={"rank": rank, "world_size": 2})
    r = stepscope("analyze", str(folder), "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [(Path(e["trace"]).name, e["rank"]) for e in doc["ranks"]] == [("a.json", 0), ("b.json", 0), ("c.json", 1)]
    assert any(n.startswith("the traces' ranks are not distinct (rank 0: a.json, b.json)") for n in doc["notes"])
    assert doc["rank_wait"] is None and doc["clocks"]["method"] == "not aligned"


def test_kernels_written_on_the_cpu_threads_pid_tid_leave_the_steps_alone(tmp_path: Path) -> None:
    """Once: the thread counted as a GPU stream, its ProfilerStep#N markers ignored, and the report
    said there were none. Read as the same trace with the kernels on a stream of their own, with a note."""
    def trace(kernel_track: tuple[int, int]) -> list[dict]:
        events = []
        for i in (1, 2, 3):
            t = 1000.0 * i
            events += [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1, "ts": t, "dur": 1000},
                       {"ph": "X", "cat": "user_annotation", "name": "forward", "pid": 1, "tid": 1, "ts": t + 10, "dur": 500},
                       {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 30,
                        "dur": 10, "args": {"correlation": i}},
                       {"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": kernel_track[0],
                        "tid": kernel_track[1], "ts": t + 50, "dur": 200, "args": {"correlation": i, "stream": 7}}]
        return events
    docs = {}
    for name, track in (("shared", (1, 1)), ("stream", (0, 7))):
        (tmp_path / f"{name}.json").write_text(json.dumps({"deviceProperties": [{"id": 0, "name": "GPU"}],
                                                           "traceEvents": trace(track)}))
        r = stepscope("analyze", f"{name}.json", "--json", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        docs[name] = json.loads(r.stdout)
    shared, stream = docs["shared"], docs["stream"]
    assert [s["ms"] for s in shared["steps"]] == [s["ms"] for s in stream["steps"]] == [1.0, 1.0, 1.0]
    assert [(r["label"], r["wall_ms"], r["gpu_ms"]) for r in shared["regions"]] == [("forward", 0.5, 0.2)]
    assert shared["regions"] == stream["regions"] and shared["gpu"]["observed"]
    assert not any("no ProfilerStep#N" in n for n in shared["notes"])
    assert any(n.startswith("device events were recorded on the CPU thread pid 1, tid 1") for n in shared["notes"])
