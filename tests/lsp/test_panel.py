"""The trace panel's requests through the real server and a real LSP client: `stepscope/timeline`
serves a run's timeline.json as written, computes a range at a finer level (and the timeline of a run
analysed before timelines existed) in a child process, and refuses bad requests in one line; a
finding offers to open the panel on its line."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Union

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from stepscope import jsonio
from stepscope.lsp import analysis_child
from stepscope.lsp.timeline_child import TimelineChild, TimelineUnavailable

from ..analysis.kineto_synth import Synth
from .test_runs import QUICK, _as_the_client_reads, _request, _wait_for
from .test_server import EXAMPLE, _initialize, _line_of, _open

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "stepscope", "serve"])
PANEL_COMMAND = "stepscope.openPanel"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "project ü"
    root.mkdir()
    return root


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, ws: Path):
    await _initialize(lsp_client, ws, {"interpreter": sys.executable, "panelCommand": PANEL_COMMAND})
    yield
    await lsp_client.shutdown_session()


def many_steps(steps: int = 300) -> Synth:
    """`steps` 1 ms steps, each with a line region holding two operators (one launching a kernel), a
    second line region and a batch read: enough spans for a summary of 1000 to be reduced."""
    s = Synth()
    for k in range(steps):
        base = k * 1000
        s.step(k + 1, base, 1000)
        s.region("ss:f0:10:next", base, 100)
        s.region("ss:f0:12", base + 100, 500)
        s.op("aten::linear", base + 110, 200)
        s.op("aten::addmm", base + 120, 150)
        s.launch(base + 130, base + 300, 200, name="gemm_kernel")
        s.region("ss:f0:14", base + 650, 300)
        s.op("aten::add", base + 660, 30)
    return s


def make_run(ws: Path, synth: Synth, run_id: str = "20261201T120000Z-train-0a0a", *, analysed: bool = True,
             timeline: bool = True) -> Path:
    """A run folder in the workspace as `stepscope profile` leaves it (trace, file table, report and,
    with `timeline`, timeline.json written by the analysis child)."""
    run = ws / ".stepscope" / "runs" / run_id
    run.mkdir(parents=True)
    synth.write(run / "trace.json")
    (run / "files.json").write_text(json.dumps({"root": str(ws), "files": {"f0": "train.py"}}))
    (ws / "train.py").write_text("\n".join(f"x{i} = {i}" for i in range(1, 40)) + "\n")
    if analysed:
        report = analysis_child.analyse(run)
        jsonio.write_json(run / "report.json", report)
        if not timeline:
            (run / "timeline.json").unlink()
    return run


async def test_the_timeline_of_a_run_is_its_timeline_json_as_written(client: LanguageClient, ws: Path):
    run = make_run(ws, many_steps(40))
    doc = await _request(client, "stepscope/timeline", {"runId": run.name})
    assert doc == _as_the_client_reads(json.loads((run / "timeline.json").read_text()))
    assert doc["window"]["steps"] == 40 and len(doc["steps"]) == 40
    assert doc["files"] == {"f0": "train.py"} and not doc["reduced"]
    assert {"operators", "kernels", "breakdown"} <= set(doc)


async def test_a_run_analysed_before_timelines_gets_one_made_once_from_its_trace(client: LanguageClient, ws: Path):
    run = make_run(ws, many_steps(40), timeline=False)
    assert not (run / "timeline.json").exists()
    doc = await _request(client, "stepscope/timeline", {"runId": run.name})
    written = run / "timeline.json"
    assert written.is_file(), "the timeline made for the panel was not kept in the run folder"
    assert doc == _as_the_client_reads(json.loads(written.read_text()))
    assert len(doc["steps"]) == 40 and doc["operators"]["rows"] and doc["breakdown"]["steps"]
    stamp = written.stat().st_mtime_ns
    assert await _request(client, "stepscope/timeline", {"runId": run.name}) == doc
    assert written.stat().st_mtime_ns == stamp  # read back, not made again


async def test_a_range_comes_at_a_finer_level_than_the_whole_window(client: LanguageClient, ws: Path):
    run = make_run(ws, many_steps(300))
    written = (run / "timeline.json").read_bytes()
    whole = await _request(client, "stepscope/timeline", {"runId": run.name, "maxSpans": 1000})
    assert whole["reduced"] and len(whole["spans"]["start_us"]) <= 1000 and whole["resolution_us"] > 0
    assert whole["spans_in_range"] > 1000
    assert len(whole["steps"]) == 300  # every step boundary is kept

    start, end = 100_000.0, 110_000.0  # ten steps of three hundred
    part = await _request(client, "stepscope/timeline", {"runId": run.name, "startUs": start, "endUs": end,
                                                         "maxSpans": 1000})
    assert part["range"] == {"start_us": start, "end_us": end}
    assert not part["reduced"] and part["resolution_us"] == 0  # ten steps fit: every span, unmerged
    starts, durs = part["spans"]["start_us"], part["spans"]["dur_us"]
    assert starts and all(start <= a and a + d <= end + 1e-6 for a, d in zip(starts, durs))
    kernels = part["categories"].index("kernel")
    assert sum(c == kernels for c in part["spans"]["category"]) == 10  # one gemm per step, none merged
    # neither a smaller summary nor a range touches the run's own timeline.json
    assert (run / "timeline.json").read_bytes() == written


async def test_bad_timeline_requests_are_one_line_refusals(client: LanguageClient, ws: Path):
    run = make_run(ws, many_steps(20))
    cases = [
        ({"runId": "../../etc"}, "not a run id"),
        ({"runId": "20990101T000000Z-none-0000"}, "no run 20990101T000000Z-none-0000"),
        ({"runId": run.name, "rank": -1}, "rank must be a whole number"),
        ({"runId": run.name, "rank": 1}, "has no trace of rank 1"),
        ({"runId": run.name, "startUs": 10.0}, "startUs and endUs must both be given"),
        ({"runId": run.name, "startUs": 500.0, "endUs": 100.0}, "is not a range inside the window"),
        ({"runId": run.name, "startUs": 0.0, "endUs": 1e12}, "is not inside the window"),
        ({"runId": run.name, "maxSpans": 10}, "maxSpans must be a whole number from 1000"),
        ({"runId": run.name, "maxSpans": "all"}, "maxSpans must be a whole number from 1000"),
    ]
    for params, said in cases:
        with pytest.raises(Exception) as refused:
            await _request(client, "stepscope/timeline", params)
        message = str(refused.value)
        assert said in message and "\n" not in message.strip(), (params, message)

    # a run that ended before its window: no trace to make a timeline from
    empty = ws / ".stepscope" / "runs" / "20261201T130000Z-train-0b0b"
    empty.mkdir()
    (empty / "status.json").write_text(json.dumps({"status": "failed", "reason": "ZeroDivisionError"}))
    with pytest.raises(Exception) as refused:
        await _request(client, "stepscope/timeline", {"runId": empty.name})
    assert "has no trace: it ended before its window was recorded" in str(refused.value)


async def test_a_spoiled_timeline_is_made_again_and_left_as_it_was(client: LanguageClient, ws: Path):
    run = make_run(ws, many_steps(20))
    (run / "timeline.json").write_text("{ not json")
    doc = await _request(client, "stepscope/timeline", {"runId": run.name})
    assert len(doc["steps"]) == 20
    assert any("timeline.json of this run could not be read (not JSON)" in n for n in doc["notes"]), doc["notes"]
    assert (run / "timeline.json").read_text() == "{ not json"  # a user's file is never overwritten


async def test_the_timeline_process_comes_back_after_it_was_killed(client: LanguageClient, ws: Path):
    run = make_run(ws, many_steps(300))
    first = await _request(client, "stepscope/timeline", {"runId": run.name, "startUs": 0.0, "endUs": 5000.0,
                                                          "maxSpans": 1000})
    children = _timeline_children()
    assert len(children) == 1, children
    os.kill(children[0], signal.SIGKILL)
    again = await _request(client, "stepscope/timeline", {"runId": run.name, "startUs": 0.0, "endUs": 5000.0,
                                                          "maxSpans": 1000})
    assert again == first
    assert _timeline_children() and _timeline_children() != children


def _timeline_children() -> list[int]:
    """Processes of this machine running the timeline child (of any server this test started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if b"stepscope.lsp.timeline_child import serve" in cmdline and _is_ours(parent):
            found.append(int(entry.name))
    return found


def _is_ours(pid: int) -> bool:
    """`pid` is a descendant of this test process (the server it started)."""
    while pid > 1:
        if pid == os.getpid():
            return True
        try:
            pid = int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False


def _tell_code_actions_from_commands(client: LanguageClient) -> None:
    """pygls's client takes every result with a `command` for a Command; VS Code, Neovim and the LSP
    spec tell a CodeAction by its `command` being an object (a Command's is a string). Read them so."""
    converter = client.protocol._converter
    either = Union[types.Command, types.CodeAction]

    def structure(obj: dict, _: object):
        return converter.structure(obj, types.Command if isinstance(obj.get("command"), str) else types.CodeAction)

    converter.register_structure_hook_func(lambda t: t == either, structure)


def test_a_timeline_that_takes_too_long_is_stopped_and_said_in_one_line(tmp_path: Path):
    run = tmp_path / "run"
    run.mkdir()
    many_steps(20).write(run / "trace.json")
    child = TimelineChild(limit_s=1.0)
    try:
        assert child.ask({"trace": str(run / "trace.json"), "whole": True, "cap": 1000})["steps"]
        pid = child.pid
        os.kill(pid, signal.SIGSTOP)  # a child that hangs, on purpose
        with pytest.raises(TimelineUnavailable) as stopped:
            child.ask({"trace": str(run / "trace.json"), "start_us": 0.0, "end_us": 1000.0, "cap": 1000})
        assert str(stopped.value) == "the timeline took longer than 1 s; it was stopped"
        assert child.pid is None and not Path(f"/proc/{pid}").exists()
        # the next request starts a new child
        assert child.ask({"trace": str(run / "trace.json"), "start_us": 0.0, "end_us": 1000.0, "cap": 1000})["spans"]
    finally:
        child.stop()


@pytest.mark.torch
async def test_a_finding_offers_to_open_the_trace_panel_on_its_line(client: LanguageClient, ws: Path):
    import shutil

    shutil.copy(EXAMPLE, ws / "train_cpu.py")
    text = (ws / "train_cpu.py").read_text()
    uri = _open(client, ws / "train_cpu.py")
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.profile", arguments=[{
            "uri": uri, "position": {"line": _line_of(text, "loss.backward()"), "character": 8}, "profile": QUICK}]))
    finding = await _wait_for(lambda: next((d for d in client.diagnostics.get(uri, []) if d.code == "input-bound"), None),
                              "the run's input-bound finding")
    static = next(d for d in client.diagnostics[uri] if d.code == "SS101")
    _tell_code_actions_from_commands(client)
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=finding.range,
        context=types.CodeActionContext(diagnostics=[finding, static])))
    opening = [a for a in actions if a.command is not None and a.command.command == PANEL_COMMAND]
    assert len(opening) == 1, [a.title for a in actions]
    (target,) = opening[0].command.arguments
    assert jsonio.plain(target) == {"runId": result["runId"], "fileId": "f0", "path": "train_cpu.py",
                              "line": finding.range.start.line + 1}
    assert opening[0].title == "Show this finding (input-bound) in the trace panel"
    # its next check, the step timed without the profiler, is an action on the run's step loop
    measuring = [a for a in actions if a.title.startswith("Measure this step without the profiler")]
    assert len(measuring) == 1 and measuring[0].command.command == "stepscope.measure", [a.title for a in actions]
    assert jsonio.plain(measuring[0].command.arguments[0]) == {
        "uri": (ws / "train_cpu.py").resolve().as_uri(),
        "position": {"line": _line_of(text, "for x, y in loader:"), "character": 0}}
    # the run's timeline is at hand for it, with the finding's line among its lines
    doc = await _request(client, "stepscope/timeline", {"runId": result["runId"]})
    lines = set(zip(doc["lines"]["file"], doc["lines"]["line"]))
    assert ("f0", finding.range.start.line + 1) in lines
