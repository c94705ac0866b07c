"""`stepscope/shareTrace` through the real server and a real LSP client: the redacted copy of each of
a run's traces is written beside it (never over an earlier copy), the answer says where and how many
secrets of each kind were replaced, never a secret; bad requests are refused in one line.
`stepscope/traceFiles` says where a run's traces are, to open in Perfetto."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from .test_panel import client, make_run, many_steps, ws  # noqa: F401 (fixtures)
from .test_runs import _request

SECRET = "jane.doe@example.com"


def secret_run(ws: Path, run_id: str = "20261201T120000Z-train-0a0a", *, ended: bool = True) -> Path:
    synth = many_steps(5)
    synth.region(SECRET, 100, 10)
    synth.region("load /home/jdoe/private-project/data.bin", 200, 10)
    run = make_run(ws, synth, run_id, analysed=False)
    if ended:
        (run / "status.json").write_text(json.dumps({"status": "complete", "reason": None}))
    return run


async def test_share_writes_the_redacted_copy_beside_the_trace_and_keeps_earlier_ones(client: LanguageClient,
                                                                                       ws: Path):
    run = secret_run(ws)
    original = (run / "trace.json").read_bytes()
    answer = await _request(client, "stepscope/shareTrace", {"runId": run.name})
    copy = run / "trace.redacted.json"
    assert answer["folder"] == str(run) and answer["runId"] == run.name
    assert [c["copy"] for c in answer["copies"]] == [str(copy)]
    counts = answer["copies"][0]["counts"]
    assert counts["email"] == 1 and counts["path"] == 1, counts
    assert answer["summary"].startswith("redacted copy written: trace.redacted.json (replaced ")
    assert "1 email" in answer["summary"] and "1 path" in answer["summary"]
    text = copy.read_text()
    assert SECRET not in text and "jdoe" not in text and "<email:1>" in text
    json.loads(text)  # still a JSON document
    assert (run / "trace.json").read_bytes() == original
    assert SECRET not in json.dumps(answer) and "jdoe" not in json.dumps(answer)

    first = copy.read_bytes()
    again = await _request(client, "stepscope/shareTrace", {"runId": run.name})
    assert [c["copy"] for c in again["copies"]] == [str(run / "trace.redacted-2.json")]
    assert copy.read_bytes() == first  # never overwritten
    # a copy is not one of the run's traces: sharing a third time copies the trace only
    third = await _request(client, "stepscope/shareTrace", {"runId": run.name})
    assert [Path(c["trace"]).name for c in third["copies"]] == ["trace.json"]


async def test_bad_share_requests_are_one_line_refusals(client: LanguageClient, ws: Path):
    going = secret_run(ws, "20261201T120000Z-train-0b0b", ended=False)
    empty = ws / ".stepscope" / "runs" / "20261201T130000Z-train-0c0c"
    empty.mkdir()
    (empty / "status.json").write_text(json.dumps({"status": "failed", "reason": "ZeroDivisionError"}))
    measured = ws / ".stepscope" / "runs" / "20261201T133000Z-train-0e0e"
    measured.mkdir()
    (measured / "status.json").write_text(json.dumps({"status": "complete"}))
    (measured / "measure.json").write_text(json.dumps({"raw_ms": [1.0, 1.1]}))
    spoiled = secret_run(ws, "20261201T140000Z-train-0d0d")
    (spoiled / "trace.json").write_text('{"traceEvents": [{"ph": "X", "name": ')
    cases = [
        ({"runId": "../../etc"}, "not a run id"),
        ({}, "not a run id"),
        ({"runId": "20990101T000000Z-none-0000"}, "no run 20990101T000000Z-none-0000"),
        ({"runId": going.name}, f"run {going.name} has not ended"),
        ({"runId": empty.name}, f"run {empty.name} has no trace to share"),
        ({"runId": measured.name}, f"run {measured.name} is a measure run: it timed the step without the profiler"),
        ({"runId": spoiled.name}, "trace.json: no redacted copy:"),
    ]
    for params, said in cases:
        with pytest.raises(Exception) as refused:
            await _request(client, "stepscope/shareTrace", params)
        message = str(refused.value)
        assert said in message and "\n" not in message.strip(), (params, message)
    assert sorted(p.name for p in spoiled.iterdir() if "redacted" in p.name) == []
    assert sorted(p.name for p in going.iterdir() if "redacted" in p.name) == []


async def test_trace_files_say_where_a_runs_traces_are_to_open_elsewhere(client: LanguageClient, ws: Path):
    run = secret_run(ws)
    (run / "trace-rank1.json").write_bytes((run / "trace.json").read_bytes())  # a second rank's
    before = sorted(p.name for p in run.iterdir())
    answer = await _request(client, "stepscope/traceFiles", {"runId": run.name})
    assert answer["runId"] == run.name and answer["folder"] == str(run)
    assert answer["traces"] == [{"path": str(run / name), "bytes": (run / name).stat().st_size}
                                for name in ("trace-rank1.json", "trace.json")]
    assert sorted(p.name for p in run.iterdir()) == before  # nothing written, nothing read into a copy
    measured = ws / ".stepscope" / "runs" / "20261201T133000Z-train-0e0e"
    measured.mkdir()
    (measured / "status.json").write_text(json.dumps({"status": "complete"}))
    (measured / "measure.json").write_text(json.dumps({"raw_ms": [1.0, 1.1]}))
    with pytest.raises(Exception) as refused:
        await _request(client, "stepscope/traceFiles", {"runId": measured.name})
    assert f"run {measured.name} is a measure run" in str(refused.value) and "no trace to open" in str(refused.value)
