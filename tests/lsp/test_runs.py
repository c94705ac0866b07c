"""Runs through the real server and a real LSP client: results kept by run id, read back from the
run folders (`stepscope/runs`, `stepscope/report`), shown only while a document's text is the text
the run measured, with hovers and labels worded by the presenter."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from stepscope.analysis import model

from .test_server import EXAMPLE, _initialize, _line_of, _open

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "stepscope", "serve"])
QUICK = {"wait": 0, "warmup": 1, "active": 3}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "project ü"
    root.mkdir()
    shutil.copy(EXAMPLE, root / "train_cpu.py")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, ws: Path):
    await _initialize(lsp_client, ws, {"interpreter": sys.executable})
    yield
    await lsp_client.shutdown_session()


async def _request(client: LanguageClient, method: str, params: dict):
    """A custom request, its answer as the JSON the server sent."""
    return _plain(await client.protocol.send_request_async(method, params))


def _as_the_client_reads(doc: dict) -> dict:
    """`doc` through the client's own conversion of unknown results (named tuples, which rename keys
    that are not identifiers), to compare with what `_request` gives."""
    from pygls.protocol import _dict_to_object

    return _plain(_dict_to_object(json.loads(json.dumps(doc))))


def _plain(value):
    if hasattr(value, "_asdict"):  # the client hands unknown results over as named tuples
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


async def _wait_for(predicate, what: str, tries: int = 100):
    for _ in range(tries):
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"never saw {what}")


def _codes(client: LanguageClient, uri: str) -> list[str]:
    return [d.code for d in client.diagnostics.get(uri, [])]


async def _hints(client: LanguageClient, uri: str) -> list[types.InlayHint]:
    return await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=500, character=0))))


async def _hover(client: LanguageClient, uri: str, line: int) -> types.Hover | None:
    return await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=6)))


def _change(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


@pytest.mark.torch
async def test_a_save_keeps_the_run_on_screen_and_an_edit_takes_it_off(client: LanguageClient, ws: Path):
    path = ws / "train_cpu.py"
    text = path.read_text()
    uri = _open(client, path)
    loop_line = _line_of(text, "for x, y in loader:")
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.profile", arguments=[{
            "uri": uri, "position": {"line": _line_of(text, "loss.backward()"), "character": 8}, "profile": QUICK}]))
    await _wait_for(lambda: "input-bound" in _codes(client, uri), "the run's finding")
    assert (await _hover(client, uri, loop_line)) is not None

    # The editor saves the document with its text unchanged (a new version, the same text): the run stays.
    _change(client, uri, 3, text)
    client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri), text=text))
    await asyncio.sleep(0.5)
    del client.diagnostics[uri]
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    codes = await _wait_for(lambda: _codes(client, uri), "diagnostics after the save")
    assert "input-bound" in codes and "SS101" in codes
    assert any("ms/step" in h.label for h in await _hints(client, uri))
    hover = await _hover(client, uri, loop_line)
    assert hover is not None and "wall:" in hover.contents.value

    # An edit changes the text the run measured: its figures and findings leave this document.
    del client.diagnostics[uri]
    _change(client, uri, 4, text.replace("for x, y in loader:", "for x, y in loader:  # edited"))
    codes = await _wait_for(lambda: uri in client.diagnostics and _codes(client, uri), "diagnostics after the edit")
    assert "input-bound" not in codes and "SS101" in codes  # the static check stays
    assert not await _hints(client, uri)
    assert await _hover(client, uri, loop_line) is None

    # The run itself is kept by its id, whatever the documents show.
    listed = await _request(client, "stepscope/runs", {})
    assert [r["id"] for r in listed["runs"]] == [result["runId"]]
    assert listed["runs"][0]["msPerStep"] == result["msPerStep"]


@pytest.mark.torch
async def test_the_hover_the_label_and_the_status_bar_say_what_the_cli_says(client: LanguageClient, ws: Path):
    path = ws / "train_cpu.py"
    text = path.read_text()
    uri = _open(client, path)
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.profile", arguments=[{
            "uri": uri, "position": {"line": _line_of(text, "loss.backward()"), "character": 8}, "profile": QUICK}]))
    run_dir = Path(result["runDir"])
    assert result["runId"] == run_dir.name
    cli = subprocess.run([sys.executable, "-m", "stepscope", "analyze", str(run_dir)], capture_output=True, text=True)
    measured_on = next(line for line in cli.stdout.splitlines() if line.startswith("measured on: "))
    # The editor names the machine as the text report does: host included.
    assert result["machine"] == measured_on.removeprefix("measured on: ")
    assert ", host " in result["machine"]
    assert result["summary"] == f"{result['status']['text']} on {result['machine']}"
    assert result["status"]["text"].endswith(" ms/step")
    assert result["runId"] in result["status"]["tooltip"] and "torch " in result["status"]["tooltip"]

    loop_line = _line_of(text, "for x, y in loader:")
    (entry,) = [e for e in result["lines"] if e["line"] == loop_line]
    hover = await _hover(client, uri, loop_line)
    assert hover.contents.kind == types.MarkupKind.Markdown
    said = hover.contents.value
    wall = entry["label"].split(" ms/step")[0]
    assert f"- wall: {wall} ms" in said
    assert f"share of the step: {entry['label'].split(' · ')[1]}" in said
    assert result["runId"] in said and "host" in said
    assert await _hover(client, uri, 0) is None  # `import` lines were not timed


@pytest.mark.torch
async def test_runs_made_by_the_cli_are_listed_and_read_back_with_their_report(client: LanguageClient, ws: Path):
    made = subprocess.run([sys.executable, "-m", "stepscope", "profile", "train_cpu.py", "--active", "2",
                           "--warmup", "1", "--json"], cwd=ws, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    printed = json.loads(made.stdout)
    (run_dir,) = (ws / ".stepscope" / "runs").iterdir()

    listed = await _request(client, "stepscope/runs", {})
    assert listed["schemaVersion"] == 1
    (run,) = listed["runs"]
    text = (ws / "train_cpu.py").read_text()
    assert run["id"] == run_dir.name and run["status"] == "complete" and run["analysed"]
    assert run["script"] == "train_cpu.py" and run["stepLine"] == _line_of(text, "for x, y in loader:") + 1
    assert run["msPerStep"] == printed["ms_per_step"] and "ms/step on CPU only, host " in run["summary"]
    assert run["started"].endswith("Z") and run["started"][:4].isdigit()

    report = await _request(client, "stepscope/report", {"runId": run["id"]})
    assert report == _as_the_client_reads(printed) and report["schema_version"] == model.SCHEMA_VERSION
    assert report["files"] == [{"path": "train_cpu.py", "in_root": True}]


async def test_bad_run_ids_and_spoiled_run_folders_are_one_line_answers(client: LanguageClient, ws: Path):
    runs = ws / ".stepscope" / "runs"
    for run_id in ("../../etc", "no-such-run", 42):
        with pytest.raises(Exception) as refused:
            await _request(client, "stepscope/report", {"runId": run_id})
        assert "not a run id" in str(refused.value) or "no run no-such-run" in str(refused.value)

    failed = runs / "20260101T000000Z-train-0a0a"
    failed.mkdir(parents=True)
    (failed / "status.json").write_text(json.dumps({"status": "failed", "exit": 3, "reason": "ZeroDivisionError at train.py:3"}))
    spoiled = runs / "20260102T000000Z-train-0b0b"
    spoiled.mkdir()
    (spoiled / "status.json").write_text(json.dumps({"status": "complete", "exit": 0, "reason": None}))
    (spoiled / "report.json").write_text(json.dumps({"schema_version": 1, "traces": ["/t.json"], "lines": "many"}))

    listed = {r["id"]: r for r in (await _request(client, "stepscope/runs", {}))["runs"]}
    assert list(listed) == [spoiled.name, failed.name]  # newest first
    assert listed[failed.name]["status"] == "failed" and not listed[failed.name]["analysed"]
    assert listed[failed.name]["reason"] == "ZeroDivisionError at train.py:3"
    assert "not a Stepscope report" in listed[spoiled.name]["problem"]

    with pytest.raises(Exception, match="has no report: it ended failed: ZeroDivisionError at train.py:3"):
        await _request(client, "stepscope/report", {"runId": failed.name})
    with pytest.raises(Exception, match=r"report.json: not a Stepscope report: \$\.lines: Expected `array`, got `str`"):
        await _request(client, "stepscope/report", {"runId": spoiled.name})


async def test_a_bad_tool_stepscope_table_is_said_once(client: LanguageClient, ws: Path):
    # Both halves of the table through one loader: the rules' keys and the findings' thresholds.
    (ws / "pyproject.toml").write_text('[tool.stepscope]\nselect = "SS101"\n[tool.stepscope.findings]\nsync-step-share = "high"\n')
    # A table above the workspace folder is never read.
    (ws.parent / "pyproject.toml").write_text('[tool.stepscope]\nignore = 3\n')
    for name in ("a.py", "b.py"):
        (ws / name).write_text("import torch\nfor i in range(3):\n    print(torch.ones(1).item())\n")
        uri = _open(client, ws / name)
        await _wait_for(lambda: uri in client.diagnostics, "diagnostics")
    said = [m.message for m in client.messages if "tool.stepscope" in m.message]
    assert len(said) == 2, said
    assert "select must be a list of rule codes" in said[0] and said[0].startswith("Stepscope: ")
    assert "sync-step-share" in said[1] or "sync_step_share" in said[1], said
    assert not any(f"{ws.parent / 'pyproject.toml'}:" in m for m in said), said
    assert all(m.type == types.MessageType.Warning for m in client.messages if "tool.stepscope" in m.message)


async def test_two_loops_that_could_be_the_step_are_both_named_with_their_lines(client: LanguageClient, ws: Path):
    path = ws / "two.py"
    path.write_text(textwrap.dedent("""\
        import torch
        model = torch.nn.Linear(4, 4)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        def train_a():
            for i in range(10):
                model(torch.randn(2, 4)).sum().backward()
                opt.step()
        def train_b():
            for i in range(10):
                model(torch.randn(2, 4)).sum().backward()
                opt.step()
        """))
    uri = _open(client, path)
    with pytest.raises(Exception) as refused:
        await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="stepscope.profile", arguments=[{"uri": uri, "position": {"line": 0, "character": 0}}]))
    said = str(refused.value)
    assert "the cursor is not in a loop, and more than one loop in two.py could be the step: line 5 (" in said
    assert "; line 9 (" in said and said.endswith("put the cursor inside the one to profile")
    assert "--line" not in said  # the CLI's flag means nothing in the editor
