"""Try this fix (measure it) through the real language server (pytest-lsp) and a real torch run on
the CPU: the code actions on a finding's variants and on a rule's quick fix, the command with its
progress, the change it measured, Apply (the very edit measured, refused once the text changed), and
a cancel that leaves nothing behind."""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from stepscope.rules.model import Edit
from stepscope.trying.change import apply_edits

from .test_panel import _tell_code_actions_from_commands
from .test_runs import QUICK, _request, _wait_for
from .test_server import EXAMPLE, _initialize, _line_of, _open

pytestmark = [pytest.mark.torch, pytest.mark.slow]

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "stepscope", "serve"])
TRY_COMMAND = "stepscope.tryFix"  # the client's command the actions name (initializationOptions.tryCommand)
MEASURE = {"warmup": 2, "passes": 6, "runs": 1}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "tried project"
    root.mkdir()
    shutil.copy(EXAMPLE, root / "train_cpu.py")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, ws: Path):
    await _initialize(lsp_client, ws, {"interpreter": sys.executable, "tryCommand": TRY_COMMAND, "measure": MEASURE})
    yield
    await lsp_client.shutdown_session()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def scratch_left(ws: Path) -> list[Path]:
    folder = ws / ".stepscope" / "scratch"
    return list(folder.iterdir()) if folder.exists() else []


def to_edits(edit: dict, uri: str) -> list[Edit]:
    (document,) = [d for d in edit["documentChanges"] if d["textDocument"]["uri"] == uri]
    return [Edit(e["range"]["start"]["line"] + 1, e["range"]["start"]["character"], e["range"]["end"]["line"] + 1,
                 e["range"]["end"]["character"], e["newText"]) for e in document["edits"]]


async def test_a_finding_and_a_quick_fix_offer_to_try_and_apply_takes_the_very_edit_measured(client: LanguageClient,
                                                                                                 ws: Path):
    script = ws / "train_cpu.py"
    text = script.read_text()
    uri = _open(client, script)
    await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.profile", arguments=[{
            "uri": uri, "position": {"line": _line_of(text, "loss.backward()"), "character": 8}, "profile": QUICK}]))
    finding = await _wait_for(lambda: next((d for d in client.diagnostics.get(uri, []) if d.code == "input-bound"), None),
                              "the run's input-bound finding", tries=400)
    static = next(d for d in client.diagnostics[uri] if d.code == "SS101")
    _tell_code_actions_from_commands(client)

    # the finding's variants and the rule's quick fix, each a "Try this fix (measure it)"
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=finding.range,
        context=types.CodeActionContext(diagnostics=[finding, static])))
    tries = {a.title: a for a in actions if a.command is not None and a.command.command == TRY_COMMAND}
    assert "Try this fix (measure it): Read the batches before the loop (an experiment)" in tries, list(tries)
    assert "Try this fix (measure it): DataLoader with 2 workers" in tries, list(tries)
    fix = tries["Try this fix (measure it): Accumulate on the device; read running once after the loop"]
    (arg,) = fix.command.arguments
    assert dict(arg["fix"]) == {"code": "SS101", "line": _line_of(text, "running += loss.item()") + 1}

    # the server's command, with its progress
    token = "try-fix"
    client.progress_reports.setdefault(token, [])
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.try", arguments=[{"uri": uri, "position": dict(arg["position"]), "fix": dict(arg["fix"])}],
        work_done_token=token))
    messages = [getattr(p, "message", None) or getattr(p, "title", None) or "" for p in client.progress_reports[token]]
    assert any("trying Accumulate on the device" in m for m in messages), messages
    assert any("the code as it is, process 1/1: pass" in m for m in messages), messages
    assert any("SS101-fix, process 1/1: pass 8/8" in m for m in messages), messages
    assert result["kind"] == "try" and len(result["tries"]) == 1
    (tried,) = result["tries"]
    assert tried["verdict"] in ("faster", "slower", "no detectable difference")
    assert "values unchanged (6 passes compared)" in tried["headline"], tried["headline"]
    assert "+        running += loss.detach().double()" in tried["diff"] and tried["applicable"]
    assert scratch_left(ws) == [] and script.read_text() == text

    # the change as measured, and Apply: the edit that turns the text tried into the text measured
    change = await _request(client, "stepscope/tryChange", {"runId": tried["runId"]})
    (changed,) = change["files"]
    assert changed["before"] == text and changed["uri"] == uri
    applied = await _request(client, "stepscope/applyTry", {"runId": tried["runId"]})
    assert apply_edits(text, to_edits(applied["edit"], uri)) == changed["after"]
    assert script.read_text() == text  # the client applies it; the server writes nothing

    # once the editor's text is no longer what was tried, Apply is refused in one line
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text + "\n# edited\n")]))
    with pytest.raises(Exception, match="train_cpu.py changed since the try \\(in the editor\\): not applied"):
        await _request(client, "stepscope/applyTry", {"runId": tried["runId"]})


async def test_cancelling_a_try_stops_both_sides_and_leaves_nothing_behind(client: LanguageClient, ws: Path):
    slow = ws / "slow.py"
    slow.write_text("import time\nimport torch\nmodel = torch.nn.Linear(4, 1)\nopt = torch.optim.SGD(model.parameters(), "
                    "lr=0.1)\ntotal = 0.0\nfor i in range(500):\n    loss = model(torch.ones(2, 4)).sum()\n"
                    "    loss.backward()\n    opt.step()\n    total += loss.item()\n    time.sleep(0.3)\n")
    before = digest(slow)
    uri = _open(client, slow)
    token = "try-cancel"
    client.progress_reports.setdefault(token, [])
    request = asyncio.ensure_future(client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.try", arguments=[{"uri": uri, "position": {"line": 9, "character": 8},
                                             "fix": {"code": "SS101", "line": 10}}], work_done_token=token)))
    await _wait_for(lambda: any("pass" in (getattr(p, "message", None) or "") for p in client.progress_reports[token]),
                    "the passes running", tries=600)
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    with pytest.raises(Exception, match="cancelled"):
        await asyncio.wait_for(request, timeout=30)
    assert digest(slow) == before and scratch_left(ws) == []
    runs = sorted((ws / ".stepscope" / "runs").iterdir())
    assert len(runs) == 2  # the code as it is, and the change: both say how they ended
    assert all('"cancelled"' in (run / "status.json").read_text() for run in runs)
    assert subprocess.run(["pgrep", "-f", str(ws / ".stepscope")], capture_output=True, text=True).stdout.strip() == ""


async def test_unsaved_changes_are_tried_only_where_there_are_some(client: LanguageClient, ws: Path):
    script = ws / "train_cpu.py"
    uri = _open(client, script)
    loop = _line_of(script.read_text(), "logits = model(x)")
    with pytest.raises(Exception, match="train_cpu.py has no unsaved changes to try"):
        await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="stepscope.try", arguments=[{"uri": uri, "position": {"line": loop, "character": 8}, "text": True}]))
    with pytest.raises(Exception, match="needs a finding, a fix or text: true"):
        await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="stepscope.try", arguments=[{"uri": uri, "position": {"line": loop, "character": 8}}]))
    assert not (ws / ".stepscope" / "runs").exists()
