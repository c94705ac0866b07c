"""`stepscope redact` on real files: recall on planted secrets, what stays byte for byte, the
analysis of the copy, exit codes, never overwriting, gzip in and out, bad input."""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path

import orjson
import pytest

from stepscope.analysis.report import analyze
from stepscope.redact import stream
from stepscope.redact.trace_file import beside, check_trace, redact_beside, redact_trace
from stepscope.trace import read_trace
from tests.conftest import run_stepscope

from .planted import WORKSPACE, write_trace

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def text_of(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def outside_strings(text: bytes) -> bytes:
    return _STRING.sub(b'""', text)


@pytest.mark.parametrize("layout", [dict(), dict(minified=True), dict(gz=False), dict(escaped_slashes=True)])
def test_every_planted_secret_is_replaced_and_nothing_else_changes(tmp_path: Path, layout):
    planted = write_trace(tmp_path, seed=1, **layout)
    out = tmp_path / ("copy.json.gz" if planted.path.name.endswith(".gz") else "copy.json")
    result = redact_trace(planted.path, out, workspace=WORKSPACE)
    copy = text_of(out).decode()
    decoded = json.dumps(json.loads(copy))  # escapes undone: a secret cannot hide behind `\/`
    for kind, secret in planted.secrets:
        for part in secret.split("\n"):
            assert part not in copy and part not in decoded, (kind, secret)
    for name in planted.kept:
        assert json.dumps(name)[1:-1] in decoded
    kinds = {f.kind for f in result.found}
    assert {"email", "token", "path", "host", "user", "input", "workspace"} <= kinds
    assert "model/net.py(40): forward" in decoded  # workspace paths become relative
    # outside the strings, every byte is as it was: same structure, numbers and layout
    assert outside_strings(text_of(out)) == outside_strings(text_of(planted.path))
    # the copy is a trace with the same events
    assert len(read_trace(out)) == len(read_trace(planted.path))
    assert "<email:1>" in copy and "<host:1>" in copy and "<user:1>" in copy and "<input:1>" in copy


def test_same_result_whatever_the_chunk_size(tmp_path: Path, monkeypatch):
    planted = write_trace(tmp_path, seed=2, gz=False)
    redact_trace(planted.path, tmp_path / "a.json")
    for size in (17, 64, 1000):
        monkeypatch.setattr(stream, "CHUNK", size)
        monkeypatch.setattr(stream, "KEY_CONTEXT", 40)
        redact_trace(planted.path, tmp_path / f"b{size}.json")
        assert (tmp_path / f"b{size}.json").read_bytes() == (tmp_path / "a.json").read_bytes()


def test_many_distinct_secrets_are_found_by_looking_at_every_name(tmp_path: Path):
    events = [{"ph": "X", "cat": "user_annotation", "name": f"generate tell me about topic number {chr(97 + i % 26)}"
               f" and {chr(97 + i // 26)} please", "pid": 1, "tid": 1, "ts": float(i), "dur": 0.5} for i in range(200)]
    events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 300.0, "dur": 1.0})
    src = tmp_path / "t.json"
    src.write_text(json.dumps({"traceEvents": events}))
    result = redact_trace(src, tmp_path / "out.json")
    assert sum(f.kind == "input" for f in result.found) == 200
    assert "topic" not in (tmp_path / "out.json").read_text()


def test_a_secret_written_with_unusual_escapes_stops_before_writing(tmp_path: Path):
    src = tmp_path / "t.json"
    # `\u0040` is `@`: the reader decodes the address, the text search cannot see it
    src.write_text('{"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "mail jane\\u0040acme.com", '
                   '"pid": 1, "tid": 1, "ts": 1.0, "dur": 1.0}]}')
    with pytest.raises(Exception, match="not found in the JSON text"):
        redact_trace(src, tmp_path / "out.json")
    assert list(tmp_path.iterdir()) == [src]  # nothing written, no temporary file left


def test_analysis_of_the_copy_gives_the_same_figures(tmp_path: Path):
    planted = write_trace(tmp_path, seed=3)
    out = tmp_path / "copy.json.gz"
    redact_trace(planted.path, out)
    a, b = analyze([planted.path]), analyze([out])
    assert a["steps"] == b["steps"] and a["ms_per_step"] == b["ms_per_step"]
    assert [r["wall_ms"] for r in a["regions"]] == [r["wall_ms"] for r in b["regions"]]
    assert [(ln["wall_ms"], ln["line"]) for ln in a["lines"]] == [(ln["wall_ms"], ln["line"]) for ln in b["lines"]]


def test_check_reports_where_and_never_the_secret(tmp_path: Path):
    planted = write_trace(tmp_path, seed=4)
    result = check_trace(planted.path)
    assert result.unsafe
    shown = json.dumps([f.__dict__ for f in result.found])
    for _kind, secret in planted.secrets:
        assert secret not in shown
    host = next(f for f in result.found if f.kind == "host" and f.key == "host_name")
    assert host.event is None and re.fullmatch(r"<host:\d+>", host.placeholder)
    label = next(f for f in result.found if f.kind == "email")
    assert label.key == "name" and isinstance(label.event, int)
    events = json.loads(text_of(planted.path))["traceEvents"]
    assert "@" in events[label.event]["name"]  # the event index points at the event


def test_redact_beside_is_one_call(tmp_path: Path):
    planted = write_trace(tmp_path, seed=5)
    result = redact_beside(planted.path)
    assert result.output == beside(planted.path).resolve() and result.output.name == "trace.redacted.json.gz"
    first = result.output.read_bytes()
    again = redact_beside(planted.path)  # an earlier copy is kept: the next free name is taken
    assert again.output.name == "trace.redacted-2.json.gz" and result.output.read_bytes() == first
    assert gzip.decompress(again.output.read_bytes()) == gzip.decompress(first)  # the same decisions


def test_cli_beside_writes_next_to_the_trace_and_never_over_a_copy(tmp_path: Path):
    planted = write_trace(tmp_path, seed=8)
    r = run_stepscope("redact", str(planted.path), "--beside", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["output"] == str((tmp_path / "trace.redacted.json.gz").resolve()) and doc["counts"]
    (tmp_path / "trace.redacted-2.json.gz").write_text("mine")
    r = run_stepscope("redact", str(planted.path), "--beside", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "trace.redacted-2.json.gz").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "trace.json.gz", "trace.redacted-2.json.gz", "trace.redacted-3.json.gz", "trace.redacted.json.gz"]
    r = run_stepscope("redact", str(tmp_path / "trace.redacted-3.json.gz"), "--check", cwd=tmp_path)
    assert r.returncode == 0, r.stdout  # the copy is clean


# ---------------------------------------------------------------- the command

def test_cli_exit_codes_and_never_overwrite(tmp_path: Path):
    planted = write_trace(tmp_path, seed=6)
    r = run_stepscope("redact", str(planted.path), "--check", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "to redact" in r.stdout
    out = tmp_path / "shared.json.gz"
    r = run_stepscope("redact", str(planted.path), "-o", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:2] == b"\x1f\x8b"
    before = out.read_bytes()
    r = run_stepscope("redact", str(planted.path), "-o", str(out), cwd=tmp_path)
    assert r.returncode == 5 and r.stderr.strip().startswith("stepscope: refusing to overwrite")
    assert out.read_bytes() == before
    r = run_stepscope("redact", str(out), "--check", cwd=tmp_path)  # the copy is clean
    assert r.returncode == 0, r.stdout
    assert "nothing to redact" in r.stdout
    plain = tmp_path / "shared.json"
    assert run_stepscope("redact", str(planted.path), "-o", str(plain), cwd=tmp_path).returncode == 0
    assert plain.read_bytes()[:1] == b"{"  # .json out: not compressed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared.json", "shared.json.gz", "trace.json.gz"]


def test_cli_check_json_shape(tmp_path: Path):
    planted = write_trace(tmp_path, seed=7)
    r = run_stepscope("redact", str(planted.path), "--check", "--json", "--workspace", WORKSPACE, cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)  # exactly one JSON document
    assert doc["check"] is True and doc["unsafe"] is True and doc["output"] is None
    assert doc["trace"] == str(planted.path.resolve()) and doc["workspace"] == WORKSPACE
    assert set(doc["counts"]) >= {"email", "token", "path", "host", "user", "input", "workspace"}
    s = doc["secrets"][0]
    assert set(s) == {"kind", "placeholder", "what", "masked", "strings", "occurrences", "first", "excerpt"}
    assert set(s["first"]) == {"event", "key", "offset"}
    assert doc["occurrences"] == sum(x["occurrences"] for x in doc["secrets"])


@pytest.mark.parametrize("make, args, reason", [
    (lambda d: None, ["missing.json", "-o", "o.json"], "no such file"),
    (lambda d: (d / "empty.json").write_bytes(b""), ["empty.json", "-o", "o.json"], "empty file"),
    (lambda d: (d / "c.json").write_text('{"a": 1}'), ["c.json", "-o", "o.json"], "not a profiler trace"),
    (lambda d: (d / "t.json").write_text('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1'),
     ["t.json", "-o", "o.json"], "truncated"),
    (lambda d: (d / "g.json.gz").write_bytes(gzip.compress(b'{"traceEvents": []}')[:20]), ["g.json.gz", "-o", "o.json"],
     "truncated"),
    (lambda d: (d / "sub").mkdir(), ["sub", "-o", "o.json"], "not a folder"),
    (lambda d: (d / "x.json").write_text("{}"), ["x.json"], "-o OUT"),
    (lambda d: (d / "t.json").write_text("{}"), ["t.json", "--check", "-o", "o.json"], "--check writes nothing"),
    (lambda d: (d / "t.json").write_text("{}"), ["t.json", "--check", "--beside"], "--check writes nothing"),
    (lambda d: (d / "t.json").write_text("{}"), ["t.json", "-o", "o.json", "--beside"], "give one"),
    (lambda d: (d / "t.json").write_text("{}"), ["t.json", "--beside"], "not a profiler trace"),
    (lambda d: (d / "t.json").write_text("{}"), ["t.json", "-o", "o.txt"], ".json or .json.gz"),
    (lambda d: (d / "t.json").write_text("{}"), ["t.json", "-o", "nowhere/o.json"], "no such folder"),
])
def test_cli_bad_input_is_one_line_and_writes_nothing(tmp_path: Path, make, args, reason):
    make(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    r = run_stepscope("redact", *args, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("stepscope:")]
    assert len(lines) == 1 and reason in lines[0], r.stderr
    assert "Traceback" not in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_run_folder_workspace_comes_from_files_json(tmp_path: Path):
    run = tmp_path / "run"
    run.mkdir()
    planted = write_trace(run, seed=8)
    (run / "files.json").write_text(json.dumps({"root": WORKSPACE, "files": {"f0": "model/net.py"}}))
    result = check_trace(planted.path)
    assert result.workspace == WORKSPACE
    assert any(f.kind == "workspace" and f.excerpt.startswith("model/net.py") for f in result.found)


def test_json_output_only_on_stdout(tmp_path: Path):
    planted = write_trace(tmp_path, seed=9)
    r = run_stepscope("redact", str(planted.path), "-o", str(tmp_path / "o.json.gz"), "--json", cwd=tmp_path)
    assert r.returncode == 0
    doc = orjson.loads(r.stdout)
    assert doc["output"] == str((tmp_path / "o.json.gz").resolve()) and doc["check"] is False
    assert r.stdout.count("\n") == 1 and sys.executable  # one document, one line
