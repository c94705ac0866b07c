"""`stepscope redact` on real files: recall on planted secrets, what stays byte for byte, the
analysis of the copy, exit codes, never overwriting, gzip in and out, bad input."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from stepscope.analysis.report import analyze
from stepscope.redact import stream
from stepscope.redact.trace_file import beside, check_trace, redact_beside, redact_trace
from stepscope.trace import read_trace
from tests.conftest import run_stepscope
from tests.corpus import DATA

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


def test_same_result_whatever_the_chunk_size_and_the_decisions_kept(tmp_path: Path, monkeypatch):
    planted = write_trace(tmp_path, seed=2, gz=False)
    redact_trace(planted.path, tmp_path / "a.json")
    for size in (17, 64, 1000):
        monkeypatch.setattr(stream, "CHUNK", size)
        monkeypatch.setattr(stream, "KEY_CONTEXT", 40)
        monkeypatch.setattr(stream, "MAX_DECIDED", 3)  # decisions forgotten and made again
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


def test_a_secret_written_with_escapes_is_replaced(tmp_path: Path):
    src = tmp_path / "t.json"
    # `\u0040` is `@` and `\u0068` is `h`: the same strings to any JSON reader
    src.write_text('{"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "mail jane\\u0040acme.com", '
                   '"pid": 1, "tid": 1, "ts": 1.0, "dur": 1.0}, {"ph": "i", "s": "t", "name": "x", "pid": 1, "tid": 1, '
                   '"ts": 2.0, "args": {"note": "\\u0068f_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"}}]}')
    redact_trace(src, tmp_path / "out.json")
    copy = json.loads((tmp_path / "out.json").read_text())["traceEvents"]
    assert copy[0]["name"] == "mail <email:1>" and copy[1]["args"]["note"] == "<token:1>"


# ---------------------------------------------------------------- what a careful user hit (each once a defect)

_LEAKY_LABELS = [
    "prompt: tell me about jane.doe@example.com please",  # was "<input:2>doe@<host:1> please"
    "user input: My password is hunter2 and my SSN is 123-45-6789",  # was "<input:4>2 and my SSN is 123-45-6789"
    "prompt: Summarize the medical record of John Smith born 1970-01-01",  # the date of birth survived
    "query=what is the capital of France?",
    "email me at bob@gmail.com tomorrow",
]


def _trace(tmp_path: Path, labels: list[str], **metadata) -> Path:
    events = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1,
               "ts": 1000.0 * i, "dur": 900.0} for i in (1, 2, 3)]
    events += [{"ph": "X", "cat": "user_annotation", "name": label, "pid": 1, "tid": 1, "ts": 1010.0 + i, "dur": 1.0}
               for i, label in enumerate(labels)]
    src = tmp_path / "trace.json"
    src.write_text(json.dumps({"traceEvents": events, **metadata}, indent=1))
    return src


def test_labels_lose_whole_secrets_and_the_copy_checks_clean(tmp_path: Path):
    src = _trace(tmp_path, _LEAKY_LABELS)
    out = tmp_path / "copy.json"
    r = run_stepscope("redact", str(src), "-o", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    names = [e["name"] for e in json.loads(out.read_text())["traceEvents"][3:]]
    text = out.read_text()
    for leaked in ("jane", "doe", "example.com", "hunter2", "123-45-6789", "1970-01-01", "John Smith", "France",
                   "bob@gmail.com", "gmail"):
        assert leaked not in text, leaked
    assert names[4] == "email me at <email:1> tomorrow"  # around a secret, a label's words stay
    r = run_stepscope("redact", str(out), "--check", cwd=tmp_path)
    assert (r.returncode, r.stdout.splitlines()[0]) == (0, f"{out}: nothing to redact")


def test_a_bare_ipv4_master_addr_is_a_host_not_a_refusal(tmp_path: Path):
    src = _trace(tmp_path, ["forward"], distributedInfo={"backend": "nccl", "rank": 0, "world_size": 2,
                                                         "master_addr": "10.1.2.3", "master_port": "29500"},
                 env={"HF_TOKEN": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567"})
    r = run_stepscope("redact", str(src), "--check", "--json", cwd=tmp_path)
    assert r.returncode == 1, r.stderr  # found, not refused (exit 2, "unusual escapes")
    doc = json.loads(r.stdout)
    assert doc["counts"] == {"host": 1, "token": 1}
    host = next(s for s in doc["secrets"] if s["kind"] == "host")
    assert host["first"] == {"event": None, "key": "master_addr", "offset": host["first"]["offset"]}
    out = tmp_path / "copy.json"
    assert run_stepscope("redact", str(src), "-o", str(out), cwd=tmp_path).returncode == 0
    copy = json.loads(out.read_text())
    assert copy["distributedInfo"] == {"backend": "nccl", "rank": 0, "world_size": 2, "master_addr": "<host:1>",
                                       "master_port": "29500"}
    assert copy["env"] == {"HF_TOKEN": "<token:1>"}


def test_a_real_trace_with_a_token_in_its_environment_is_redacted_and_its_system_left_alone(tmp_path: Path):
    """A public MI300X trace whose metadata holds the environment (an HF_TOKEN, cluster addresses),
    the pip packages (`ninja==1.11.1.4`) and lscpu's text: once refused ("unusual escapes"), so it
    could be neither redacted nor checked."""
    src = DATA / "robustness" / "fuzz_0005_mi300_swap_ts_dur.json.gz"
    out = tmp_path / "copy.json.gz"
    r = run_stepscope("redact", str(src), "-o", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    before, after = json.loads(text_of(src))["metadata"], json.loads(text_of(out))["metadata"]
    env, system = after["system"]["env"], after["system"]
    assert before["system"]["env"]["HF_TOKEN"].startswith("hf_") and env["HF_TOKEN"] == "<token:1>"
    assert env["KUBERNETES_PORT"].startswith("tcp://<host:")
    assert system["pip_packages"] == before["system"]["pip_packages"]  # ninja==1.11.1.4 among them
    # lscpu's lines ("Flags: fpu vme de pse ...", "Vulnerability ...: Mitigation; ...") are no one's input
    assert system["torch_env_info"]["cpu_info"] == before["system"]["torch_env_info"]["cpu_info"]
    assert before["system"]["env"]["HF_TOKEN"][3:] not in text_of(out).decode()
    assert run_stepscope("redact", str(out), "--check", cwd=tmp_path).returncode == 0


def test_versions_are_not_hosts_and_bare_home_folders_lose_the_user(tmp_path: Path):
    kept = ["pip install ninja==1.11.1.4 torch==2.1.0+cu121", "cudnn 8.9.2.26", "127.0.0.1:29500"]
    homes = ["cd /home/jane", "/Users/jane.doe", "HOME=/home/jane/", "C:\\Users\\Jane"]
    src = _trace(tmp_path, kept + homes)
    out = tmp_path / "copy.json"
    redact_trace(src, out)
    names = [e["name"] for e in json.loads(out.read_text())["traceEvents"][3:]]
    assert names[:3] == kept
    assert names[3:] == ["cd /<path:1>", "/<path:2>", "HOME=/<path:1>/", "C:\\<path:3>"]
    assert "jane" not in out.read_text().lower()


def test_a_pipe_is_read_once_and_redacted(tmp_path: Path):
    src = _trace(tmp_path, ["mail jane@acme.com"])
    out = tmp_path / "copy.json"
    cmd = f"cat {src} | {sys.executable} -m stepscope redact /dev/stdin -o {out}"
    r = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["traceEvents"][3]["name"] == "mail <email:1>"
    r = subprocess.run(["bash", "-c", f"cat {src} | {sys.executable} -m stepscope redact /dev/stdin --check --json"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and json.loads(r.stdout)["trace"] == "/dev/stdin", r.stderr


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


def test_unreadable_traces_and_unwritable_folders_are_one_line_refusals(locked_out):
    run, folder = locked_out
    planted = write_trace(folder, seed=10, gz=False)
    locked = folder / "locked"
    locked.mkdir()
    (locked / "trace.json").write_bytes(planted.path.read_bytes())
    locked.chmod(0o555)  # may be entered and read, not written
    r = run("redact", str(planted.path), "-o", str(locked / "copy.json"))
    assert (r.returncode, r.stderr) == (2, f"stepscope: cannot write in {locked}: permission denied\n")
    locked.chmod(0)
    for args in (["--check"], ["-o", str(folder / "copy.json")], ["--beside"]):
        r = run("redact", str(locked / "trace.json"), *args)
        assert (r.returncode, r.stderr) == (2, f"stepscope: cannot read {locked / 'trace.json'}: permission denied\n")
    assert sorted(p.name for p in folder.iterdir()) == ["locked", "trace.json"]  # nothing written


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
