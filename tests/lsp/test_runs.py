"""Runs through the real server and a real LSP client: results kept by run id, read back from the
run folders (`stepscope/runs`, `stepscope/report`), shown only while a document's text is the text
the run measured, with hovers and labels worded by the presenter."""

from __future__ import annotations

import ast
import asyncio
import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import unquote

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from stepscope.analysis import model, present
from stepscope.jsonio import plain

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
    await _initialize(lsp_client, ws, {"interpreter": sys.executable, "panelCommand": "stepscope.openPanel"})
    yield
    await lsp_client.shutdown_session()


async def _request(client: LanguageClient, method: str, params: dict):
    """A custom request, its answer as the JSON the server sent."""
    return plain(await client.protocol.send_request_async(method, params))


def _as_the_client_reads(doc: dict) -> dict:
    """`doc` through the client's own conversion of unknown results (named tuples, which rename keys
    that are not identifiers), to compare with what `_request` gives."""
    from pygls.protocol import _dict_to_object

    return plain(_dict_to_object(json.loads(json.dumps(doc))))


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


async def _figures(client: LanguageClient, uri: str) -> dict:
    return await _request(client, "stepscope/figures", {"uri": uri})


def _hint_lines(hints: list[types.InlayHint]) -> dict[int, str]:
    return {h.position.line: h.label.strip() for h in hints}


def _finding_lines(client: LanguageClient, uri: str, kind: str) -> list[int]:
    return [d.range.start.line for d in client.diagnostics.get(uri, []) if d.code == kind]


@pytest.mark.torch
async def test_figures_follow_their_lines_through_edits_reopening_and_a_restart(client: LanguageClient, ws: Path):
    path = ws / "train_cpu.py"
    text = path.read_text()
    uri = _open(client, path)
    loop_line = _line_of(text, "for x, y in loader:")
    backward_line = _line_of(text, "loss.backward()")
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.profile", arguments=[{
            "uri": uri, "position": {"line": backward_line, "character": 8}, "profile": QUICK}]))
    await _wait_for(lambda: "input-bound" in _codes(client, uri), "the run's finding")
    before = _hint_lines(await _hints(client, uri))
    assert loop_line in before and backward_line in before
    measured = await _figures(client, uri)
    # the loop's header holds its body's timed lines: its label says which, a plain statement's does not
    loop = next(n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.For) and n.lineno == loop_line + 1)
    inside = [e["line"] + 1 for e in measured["lines"] if loop_line < e["line"] < loop.end_lineno]
    assert before[loop_line].endswith(f" · includes lines {min(inside)}–{max(inside)}"), before[loop_line]
    assert "includes" not in before[backward_line]
    assert measured["runId"] == result["runId"] and measured["hidden"] == 0 and measured["notes"] == []
    # the run keeps the text it measured, so its figures can follow their lines later
    sources = json.loads((Path(result["runDir"]) / "sources.json").read_text())
    assert sources["files"] == {"train_cpu.py": text}

    # The editor saves the document with its text unchanged (a new version, the same text): all stays.
    _change(client, uri, 3, text)
    client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri), text=text))
    await asyncio.sleep(0.5)
    assert _hint_lines(await _hints(client, uri)) == before

    # Two lines inserted above the loop and the loop's header edited: the header's figures and its
    # finding are hidden (that code changed); every other line keeps its figures, those below the
    # insertion two lines down.
    lines = text.split("\n")
    lines[loop_line] = lines[loop_line] + "  # edited"
    lines[loop_line - 1:loop_line - 1] = ["    # a note", "    # another"]
    edited = "\n".join(lines)
    del client.diagnostics[uri]
    _change(client, uri, 4, edited)
    codes = await _wait_for(lambda: uri in client.diagnostics and _codes(client, uri), "diagnostics after the edit")
    assert "input-bound" not in codes and "SS101" in codes  # the static check stays
    after = _hint_lines(await _hints(client, uri))
    assert after == {line + 2 if line > loop_line else line: label for line, label in before.items()
                     if line != loop_line}
    hover = await _hover(client, uri, backward_line + 2)
    assert hover is not None and "wall:" in hover.contents.value
    assert "1 timed line changed since this run" in hover.contents.value
    assert await _hover(client, uri, loop_line + 2) is None  # the edited header: its code changed
    moved = await _figures(client, uri)
    assert moved["hidden"] == 1 and {e["line"] for e in moved["lines"]} == set(after) | {
        e["line"] for e in moved["lines"] if not e["labelled"]}

    # Closing and reopening the document (same edited text) shows the run again, as it was.
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    await asyncio.sleep(0.3)
    assert (await _figures(client, uri))["runId"] is None
    path.write_text(edited)
    _open(client, path, edited)
    await asyncio.sleep(0.5)
    assert _hint_lines(await _hints(client, uri)) == after

    # A new server (the editor restarted) shows the same run on the same lines: editor.json says
    # which run the file showed, sources.json what it measured.
    state = json.loads((ws / ".stepscope" / "editor.json").read_text())
    assert state["shown"] == {"train_cpu.py": result["runId"]}
    restarted = await SERVER.start()
    try:
        await _initialize(restarted, ws, {"interpreter": sys.executable})
        _open(restarted, path, edited)
        await _wait_for(lambda: uri in restarted.diagnostics, "diagnostics after the restart")
        assert _hint_lines(await _hints(restarted, uri)) == after
        assert (await _figures(restarted, uri))["runId"] == result["runId"]
    finally:
        await restarted.shutdown_session()

    # The run itself is kept by its id, whatever the documents show.
    listed = await _request(client, "stepscope/runs", {})
    assert [r["id"] for r in listed["runs"]] == [result["runId"]]
    assert listed["runs"][0]["msPerStep"] == result["msPerStep"]

    # Profiled again on the edited code, the two runs compare statement by statement, each matched by its
    # code: loss.backward() is set beside itself two lines down, the edited loop header is in each run's
    # code only (the trace panel shows this; `stepscope runs compare` prints the same statements).
    second = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.profile", arguments=[{
            "uri": uri, "position": {"line": backward_line + 2, "character": 8}, "profile": QUICK}]))
    answer = await _request(client, "stepscope/compareRuns", {"a": result["runId"], "b": second["runId"]})
    statements = answer["statements"]
    by_text = {e["text"]: e for e in statements["lines"]}
    backward = by_text["loss.backward()"]
    assert (backward["a"]["line"], backward["b"]["line"], backward["match"]) == (backward_line + 1, backward_line + 3,
                                                                                 "code")
    assert backward["a"]["wall_ms"] > 0 and backward["b"]["wall_ms"] > 0
    header = lines[loop_line + 2].strip()
    assert by_text["for x, y in loader:"]["b"] is None and by_text[header]["a"] is None
    assert f"| `loss.backward()` | `train_cpu.py:{backward_line + 1}` | `train_cpu.py:{backward_line + 3}` |" in \
        answer["markdown"]
    cli = subprocess.run([sys.executable, "-m", "stepscope", "runs", "compare", result["runId"], second["runId"],
                          "--json"], cwd=ws, capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["lines"] == statements["lines"]  # the CLI's statements, the same


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
    # the step without the profiler leads, the profiled figure beside it: the CLI's first line, the status bar
    # and the summary say the same two figures
    real = cli.stdout.splitlines()[0].split(" ms/step without the profiler")[0]
    profiled = present.ms_short(result["msPerStep"])
    assert result["status"]["text"] == f"{real} ms/step ({profiled} profiled)"
    assert result["summary"] == f"{real} ms/step without the profiler ({profiled} profiled) on {result['machine']}"
    assert result["runId"] in result["status"]["tooltip"] and "torch " in result["status"]["tooltip"]

    loop_line = _line_of(text, "for x, y in loader:")
    (entry,) = [e for e in result["lines"] if e["line"] == loop_line]
    hover = await _hover(client, uri, loop_line)
    assert hover.contents.kind == types.MarkupKind.Markdown
    said = hover.contents.value
    wall = entry["label"].split(" ms/step")[0]
    assert f"- wall: {wall} ms" in said
    assert f"share of the mean step: {entry['label'].split(' · ')[1]}" in said
    assert result["runId"] in said and "host" in said
    assert await _hover(client, uri, 0) is None  # `import` lines were not timed

    # Stepscope's regions are named by their lines everywhere a user reads them, never by their
    # labels (`ss:f0:12:next`): the CLI text and its JSON findings, the hovers, the findings shown.
    await _wait_for(lambda: "input-bound" in _codes(client, uri), "the run's finding")
    as_json = json.loads(subprocess.run([sys.executable, "-m", "stepscope", "analyze", str(run_dir), "--json"],
                                        capture_output=True, text=True, check=True).stdout)
    (input_bound,) = [f for f in as_json["findings"] if f["kind"] == "input-bound"]
    assert f"train_cpu.py:{loop_line + 1} (batch read)" in input_bound["observation"]
    assert f"train_cpu.py:{loop_line + 1} (batch read)" in cli.stdout
    hovers = [await _hover(client, uri, e["line"]) for e in result["lines"]]
    read = {
        "the CLI's text": cli.stdout,
        "the JSON findings": json.dumps([{k: v for k, v in f.items() if k != "figures"} for f in as_json["findings"]]),
        "the hovers": "\n".join(h.contents.value for h in hovers if h),
        "the findings shown": "\n".join(d.message for d in client.diagnostics[uri]),
        "the labels": "\n".join(e["label"] for e in result["lines"]) + result["summary"],
    }
    for where, words in read.items():
        assert re.search(r"ss:\w+:\d", words) is None, f"{where} name a region by its label: {words}"


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
    assert run["msPerStep"] == printed["ms_per_step"] and "profiled) on CPU only, host " in run["summary"]
    assert run["started"].endswith("Z") and run["started"][:4].isdigit()

    report = await _request(client, "stepscope/report", {"runId": run["id"]})
    # beside the report, the words the panel shows for the step timed without the profiler: the CLI's
    words = report.pop("distortion_words")
    assert words.startswith("without the profiler: ") and words == present.distortion_text(printed)
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
    assert "the cursor is in no step, and more than one step in two.py could be the one: line 5 (" in said
    assert "; line 9 (" in said and said.endswith("put the cursor inside the loop or the step function to profile, "
                                                  "or use its lens")
    assert "--line" not in said  # the CLI's flag means nothing in the editor


@pytest.mark.torch
async def test_a_failed_run_keeps_the_last_good_figures_marked_and_the_runs_can_be_opened_compared_and_deleted(
        client: LanguageClient, ws: Path):
    path = ws / "train_cpu.py"
    text = path.read_text()
    uri = _open(client, path)
    loop_line = _line_of(text, "for x, y in loader:")
    model_line = _line_of(text, "logits = model(x)")
    position = {"line": _line_of(text, "loss.backward()"), "character": 8}

    # The loop a profile at the cursor would time, named for the progress title.
    step = await _request(client, "stepscope/resolveStep", {"uri": uri, "position": position})
    assert step == {"uri": uri, "line": loop_line, "file": "train_cpu.py", "header": "for x, y in loader:",
                    "function": None, "title": f"the loop at train_cpu.py:{loop_line + 1} (for x, y in loader:)"}

    good = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.profile", arguments=[{"uri": uri, "position": position, "profile": QUICK,
                                                 "confirmed": True}]))
    # a client that asked the user before the first run gets no notice after it
    assert not any("real updates" in m.message for m in client.messages)
    await _wait_for(lambda: "input-bound" in _codes(client, uri), "the run's finding")
    labels = _hint_lines(await _hints(client, uri))

    # The hover says what the line ran, the run and machine, the share's basis, and links to the panel
    # (this client said which command opens it).
    hover = (await _hover(client, uri, model_line)).contents.value
    assert "**Operators it called**" in hover and "`aten::linear` ×3" in hover, hover
    assert "Kernels" not in hover  # a CPU run: no kernel list, GPU said not observed
    assert f"run `{good['runId']}`" in hover and "CPU only, host " in hover
    assert "share of the mean step" in hover
    link = next(part for part in hover.split("(") if part.startswith("command:stepscope.openPanel?"))
    target = json.loads(unquote(link.split("?", 1)[1].rstrip(")").split(")")[0]))
    assert target == [{"runId": good["runId"], "fileId": "f0", "path": "train_cpu.py", "line": model_line + 1}]

    # A finding in the Problems view: observation, hypothesis and next check, no absolute path or host
    # name, its kind linked to its documentation.
    (finding,) = [d for d in client.diagnostics[uri] if d.code == "input-bound"]
    assert [row.split(":")[0] for row in finding.message.splitlines()[1:]] == ["Hypothesis", "Next check"]
    assert str(ws) not in finding.message and "measured on" not in finding.message
    assert finding.code_description.href.endswith("docs/findings.md#input-bound")
    assert finding.source == "stepscope run"
    # its squiggle starts at the code, not at the line's indentation
    code_line = (ws / "train_cpu.py").read_text().splitlines()[finding.range.start.line]
    assert code_line.startswith(" ") and finding.range.start.character == len(code_line) - len(code_line.lstrip())

    # The same script, run so that it fails (too few steps to reach the window): nothing is painted
    # over, the last good run stays, and its documents say their figures are from it.
    client.figures_changed.clear()
    with pytest.raises(Exception, match="fewer than") as failure:
        await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="stepscope.profile", arguments=[{"uri": uri, "position": position, "profile": QUICK,
                                                     "launch": {"args": ["--steps", "1"]}, "confirmed": True}]))
    assert str(ws) not in str(failure.value)  # the run is named in the log, not its absolute folder
    await _wait_for(lambda: client.figures_changed, "the figures-changed notification")
    assert [uri] in client.figures_changed
    figures = await _figures(client, uri)
    assert figures["runId"] == good["runId"] and figures["stale"]
    assert figures["notes"][0].startswith(f"These figures are from run {good['runId']}; the run of ")
    assert "failed: the loop ran 1 steps" in figures["notes"][0]
    assert _hint_lines(await _hints(client, uri)) == labels
    stale = await _wait_for(lambda: [d for d in client.diagnostics.get(uri, []) if d.code == "input-bound"
                                     and d.message.startswith("(from run ")], "the finding marked stale")
    assert f"(from run {good['runId']}: a later run failed)" in stale[0].message
    assert "failed: the loop ran 1 steps" in (await _hover(client, uri, model_line)).contents.value

    # A second good run: the runs view lists three (the failed one too), newest first.
    second = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.profile", arguments=[{"uri": uri, "position": position, "profile": QUICK,
                                                 "confirmed": True}]))
    assert not (await _figures(client, uri))["stale"]
    runs = (await _request(client, "stepscope/runs", {}))["runs"]
    assert [r["status"] for r in runs] == ["complete", "failed", "complete"]
    assert runs[0]["id"] == second["runId"] and runs[2]["id"] == good["runId"]

    # Open the first run again: its figures come back on the document.
    opened = await _request(client, "stepscope/showRun", {"runId": good["runId"]})
    assert opened["runId"] == good["runId"] and opened["status"]["text"].endswith(" profiled)")
    assert (await _figures(client, uri))["runId"] == good["runId"]

    # Compare two runs line by line.
    compared = (await _request(client, "stepscope/compareRuns", {"a": good["runId"], "b": second["runId"]}))["markdown"]
    assert f"| `train_cpu.py:{loop_line + 1}` |" in compared and "| ms/step |" in compared
    with pytest.raises(Exception, match="has no report: it ended failed"):
        await _request(client, "stepscope/compareRuns", {"a": good["runId"], "b": runs[1]["id"]})

    # Delete the run on screen: its folder goes, the document shows nothing, the others stay.
    assert (await _request(client, "stepscope/deleteRun", {"runId": good["runId"]})) == {"deleted": good["runId"]}
    assert not (ws / ".stepscope" / "runs" / good["runId"]).exists()
    assert (await _figures(client, uri))["runId"] is None
    assert [r["id"] for r in (await _request(client, "stepscope/runs", {}))["runs"]] == [second["runId"], runs[1]["id"]]
    for bad in ("../runs", "..", good["runId"]):
        with pytest.raises(Exception, match="not a run id|no run "):
            await _request(client, "stepscope/deleteRun", {"runId": bad})
    assert (ws / "train_cpu.py").exists() and (ws / ".stepscope" / "runs").is_dir()

    # Retention: keep the newest 1 run; older ones go after the next good run, the shown one stays.
    third = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.profile", arguments=[{"uri": uri, "position": position, "profile": QUICK,
                                                 "confirmed": True, "keep": 1}]))
    assert sorted(third["deleted"]) == sorted([second["runId"], runs[1]["id"]])
    assert [r["id"] for r in (await _request(client, "stepscope/runs", {}))["runs"]] == [third["runId"]]


FAILING = textwrap.dedent("""\
    import sys
    import torch

    model = torch.nn.Linear(10, 5)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    fail = "--fail" in sys.argv


    def forward(x):
        return model(x)


    for step in range(8):
        x = torch.randn(64, 20 if fail and step == 2 else 10)
        loss = forward(x).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
    """)


def _raised(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics.get(uri, []) if d.code == "run-failed"]


@pytest.mark.torch
async def test_where_a_failed_run_raised_is_an_error_on_that_line_until_a_run_ends_well(
        client: LanguageClient, ws: Path):
    path = ws / "boom.py"
    path.write_text(FAILING)
    uri = _open(client, path)
    raised_line = _line_of(FAILING, "return model(x)")
    position = {"line": _line_of(FAILING, "loss.backward()"), "character": 8}
    with pytest.raises(Exception, match="RuntimeError"):
        await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="stepscope.profile", arguments=[{"uri": uri, "position": position, "profile": QUICK,
                                                     "launch": {"args": ["--fail"]}, "confirmed": True}]))
    exception = "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x20 and 10x5)"
    (error,) = await _wait_for(lambda: _raised(client, uri), "the error where the program raised")
    # the innermost frame in the user's code (torch's frames below it are not the user's), from its code on
    assert error.range.start.line == raised_line and error.range.start.character == 4
    assert error.message == f"the profiled run failed here: {exception}"
    assert error.severity == types.DiagnosticSeverity.Error and error.source == "stepscope run"

    # The runs view's log of the failed run: how it ended, where it raised, then the program's log.
    run_id = next(r["id"] for r in (await _request(client, "stepscope/runs", {}))["runs"] if r["status"] == "failed")
    answer = await _request(client, "stepscope/runLog", {"runId": run_id})
    assert answer["status"] == "failed" and "RuntimeError" in answer["reason"]
    assert answer["raisedAt"] == {"uri": uri, "line": raised_line, "file": "boom.py", "exception": exception,
                                  "message": f"the profiled run failed here: {exception}"}
    assert answer["logFile"] == "program.log" and not answer["truncated"]
    assert "Traceback (most recent call last):" in answer["log"] and exception in answer["log"]
    assert answer["text"].startswith(f"Run {run_id}: failed: {answer['reason']}\n"
                                     f"Raised at boom.py:{raised_line + 1}: {exception}\n--- program.log ---\n")
    for bad, said in (("no-such-run", "no run no-such-run"), ("../x", "not a run id")):
        with pytest.raises(Exception, match=said):
            await _request(client, "stepscope/runLog", {"runId": bad})

    # The error follows its line through an edit above it, and goes with an edit of that line.
    lines = FAILING.split("\n")
    _change(client, uri, 2, "\n".join(["# a note", *lines]))
    await _wait_for(lambda: [d for d in _raised(client, uri) if d.range.start.line == raised_line + 1], "it moved")
    lines[raised_line] = "    return model(x.float())"
    _change(client, uri, 3, "\n".join(lines))
    await _wait_for(lambda: uri in client.diagnostics and not _raised(client, uri), "it hidden")
    _change(client, uri, 4, FAILING)
    await _wait_for(lambda: _raised(client, uri), "it back with the code it raised on")
    # Closed, the file keeps it in the Problems view, placed on the file as saved.
    del client.diagnostics[uri]
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    (kept,) = await _wait_for(lambda: _raised(client, uri), "it kept after closing")
    assert kept.range.start.line == raised_line

    # The next run of the script that ends well removes it.
    await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.profile", arguments=[{"uri": uri, "position": position, "profile": QUICK,
                                                 "confirmed": True}]))
    await _wait_for(lambda: uri in client.diagnostics and not _raised(client, uri), "it gone after a good run")

    # A measure of the step does the same: its failure marks the line, its next good run removes it.
    measure = {"warmup": 1, "passes": 3}
    with pytest.raises(Exception, match="RuntimeError"):
        await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="stepscope.measure", arguments=[{"uri": uri, "position": position, "measure": measure,
                                                     "launch": {"args": ["--fail"]}, "confirmed": True}]))
    (error,) = await _wait_for(lambda: _raised(client, uri), "the error of the failed measure")
    assert error.range.start.line == raised_line and error.message == f"the measured run failed here: {exception}"
    await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.measure", arguments=[{"uri": uri, "position": position, "measure": measure,
                                                 "confirmed": True}]))
    await _wait_for(lambda: not _raised(client, uri), "it gone after a good measure")


@pytest.mark.torch
async def test_the_log_of_a_run_still_going_is_refused_in_one_line(client: LanguageClient, ws: Path):
    path = ws / "slow.py"
    path.write_text("import time\nimport torch\n\nfor step in range(6):\n    torch.ones(2).sum()\n"
                    "    time.sleep(0.5)\n")
    uri = _open(client, path)
    running = asyncio.ensure_future(client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.profile", arguments=[{"uri": uri, "position": {"line": 4, "character": 4},
                                                 "profile": QUICK, "confirmed": True}])))
    runs = ws / ".stepscope" / "runs"
    (run_dir,) = await _wait_for(lambda: runs.is_dir() and [d for d in runs.iterdir() if (d / "spec.json").is_file()],
                                 "the run folder", tries=600)
    with pytest.raises(Exception, match=f"run {run_dir.name} is still running"):
        await _request(client, "stepscope/runLog", {"runId": run_dir.name})
    await running
    ended = await _request(client, "stepscope/runLog", {"runId": run_dir.name})
    assert ended["status"] == "complete" and ended["reason"] is None and ended["raisedAt"] is None
