"""The real language server over stdio, driven by a real LSP client (pytest-lsp)."""

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

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "train_cpu.py"


def _line_of(text: str, needle: str) -> int:
    """0-based line of the first line containing `needle`."""
    return next(i for i, line in enumerate(text.splitlines()) if needle in line)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "project with space"
    root.mkdir()
    shutil.copy(EXAMPLE, root / "train_cpu.py")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "stepscope", "serve"])


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, ws: Path):
    await _initialize(lsp_client, ws, {"interpreter": sys.executable})
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=SERVER)
async def client_with_profile_settings(lsp_client: LanguageClient, ws: Path):
    """A client that starts the server with capture settings, as the editor does from stepscope.profile.*."""
    await _initialize(lsp_client, ws, {"interpreter": sys.executable, "profile": {"active": 3, "shapes": True}})
    yield
    await lsp_client.shutdown_session()


async def _initialize(lsp_client: LanguageClient, ws: Path, options: dict) -> None:
    lsp_client.inlay_hint_refreshes = 0
    lsp_client.figures_changed = []

    @lsp_client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def _refresh(params: None) -> None:
        lsp_client.inlay_hint_refreshes += 1

    @lsp_client.feature("stepscope/figuresChanged")
    def _figures_changed(params) -> None:
        uris = params.get("uris") if isinstance(params, dict) else getattr(params, "uris", [])
        lsp_client.figures_changed.append(list(uris))

    caps = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            inlay_hint=types.InlayHintWorkspaceClientCapabilities(refresh_support=True)),
        window=types.WindowClientCapabilities(work_done_progress=True),
    )
    lsp_client.initialized_with = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=caps,
        workspace_folders=[types.WorkspaceFolder(uri=ws.as_uri(), name="ws")],
        initialization_options=options,
    ))


def _open(client: LanguageClient, path: Path, text: str | None = None) -> str:
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=text if text is not None else path.read_text())))
    return uri


async def _diagnostics(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    for _ in range(100):
        if uri in client.diagnostics:
            return list(client.diagnostics[uri])
        await asyncio.sleep(0.05)
    raise AssertionError(f"no diagnostics published for {uri}")


async def test_sync_in_the_training_loop_is_flagged_on_open_and_cleared_on_change(client: LanguageClient, ws: Path):
    path = ws / "train_cpu.py"
    text = path.read_text()
    uri = _open(client, path)
    found = await _diagnostics(client, uri)
    item_line = _line_of(text, "running += loss.item()")
    ss101 = [d for d in found if d.code == "SS101"]
    assert [d.range.start.line for d in ss101] == [item_line]
    d = ss101[0]
    assert text.splitlines()[item_line][d.range.start.character:d.range.end.character].startswith("loss.item")
    assert d.source == "stepscope"

    fixed = text.replace("running += loss.item()  # synchronises every step", "running += 0.0")
    del client.diagnostics[uri]
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)]))
    found = await _diagnostics(client, uri)
    assert [d for d in found if d.code == "SS101"] == []


async def test_half_typed_code_gets_no_crash_and_keeps_serving(client: LanguageClient, ws: Path):
    path = ws / "broken.py"
    path.write_text("import torch\nfor x in loader:\n    loss = model(x\n")
    uri = _open(client, path)
    await _diagnostics(client, uri)  # published (possibly empty), server alive
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert not lenses


async def test_a_notebook_cell_with_ipython_syntax_is_checked_on_its_own_lines(client: LanguageClient, ws: Path):
    # VS Code sends each cell of a notebook as a document of its own
    cell = ("!pip install -q einops\n"
            "%load_ext autoreload\n"
            "for x, y in loader:\n"
            "    loss = model(x).sum()\n"
            "    loss.backward()\n"
            "    print(loss.item())\n"
            "    %time optimizer.step()\n")
    uri = f"vscode-notebook-cell:{(ws / 'train.ipynb').as_posix()}#W2sZmlsZQ%3D%3D"
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=cell)))
    found = [d for d in await _diagnostics(client, uri) if d.code == "SS101"]
    assert [(d.range.start.line, d.range.start.character) for d in found] == [(5, 10)]
    assert "training loop (line 3)" in found[0].message


async def test_code_lens_offers_profile_and_measure_this_step_as_commands_the_server_runs(
        client: LanguageClient, ws: Path):
    # a client that names no commands of its own (Neovim, Helix…) gets lenses it can run: the
    # server's own commands, which it sends back as workspace/executeCommand
    path = ws / "train_cpu.py"
    text = path.read_text()
    uri = _open(client, path)
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    loop_line = _line_of(text, "for x, y in loader:")
    assert [(lens.range.start.line, lens.command.title, lens.command.command) for lens in lenses] == [
        (loop_line, "Profile this step", "stepscope.profile"), (loop_line, "Measure this step", "stepscope.measure")]
    offered = client.initialized_with.capabilities.execute_command_provider.commands
    assert {"stepscope.profile", "stepscope.measure"} <= set(offered)


@pytest.mark.torch
async def test_profile_command_reports_progress_and_per_line_timings(client: LanguageClient, ws: Path):
    path = ws / "train_cpu.py"
    text = path.read_text()
    uri = _open(client, path)
    body_line = _line_of(text, "loss.backward()")
    token = "profile-1"
    client.progress_reports.setdefault(token, [])
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.profile",
        arguments=[{"uri": uri, "position": {"line": body_line, "character": 8}, "python": sys.executable}],
        work_done_token=token))
    assert result["msPerStep"] > 0
    assert "ms/step without the profiler (" in result["summary"] and "profiled) on CPU only" in result["summary"]
    by_line = {entry["line"]: entry for entry in result["lines"]}
    fetch = by_line[_line_of(text, "for x, y in loader:")]
    item = by_line[_line_of(text, "running += loss.item()")]
    assert fetch["label"].split()[1] == "ms/step" and fetch["uri"] == uri
    # The slow batch read is the costliest line of the step.
    assert max(result["lines"], key=lambda e: e["wallMs"]) is fetch
    assert 0 < item["fraction"] < fetch["fraction"] <= 1
    kinds = [p.kind for p in client.progress_reports[token]]
    assert kinds[0] == "begin" and kinds[-1] == "end" and "report" in kinds
    run_dir = Path(result["runDir"])
    assert run_dir.parent == ws / ".stepscope" / "runs"
    assert json.loads((run_dir / "status.json").read_text())["status"] == "complete"
    assert path.read_text() == text  # the user's file is never modified

    # Findings of the run appear on their lines, with the next check in the message.
    for _ in range(50):
        if any(d.code == "input-bound" for d in client.diagnostics.get(uri, [])):
            break
        await asyncio.sleep(0.1)
    (input_bound,) = [d for d in client.diagnostics[uri] if d.code == "input-bound"]
    assert input_bound.range.start.line == _line_of(text, "for x, y in loader:")
    assert "Next check:" in input_bound.message
    assert any(d.code == "SS101" for d in client.diagnostics[uri])  # static checks stay
    # The first run in a workspace says plainly that the step performs real updates.
    assert any("real updates" in m.message for m in client.messages)
    assert client.inlay_hint_refreshes >= 1  # other editors are told to ask for the timings
    hints = await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=200, character=0))))
    assert any("ms/step" in h.label for h in hints)


@pytest.mark.torch
async def test_cancelling_the_progress_stops_the_program(client: LanguageClient, ws: Path):
    slow = ws / "slow.py"
    slow.write_text(textwrap.dedent("""\
        import time
        import torch
        model = torch.nn.Linear(4, 4)
        for i in range(100000):
            model(torch.randn(2, 4)).sum().backward()
            time.sleep(0.5)
        """))
    uri = _open(client, slow)
    token = "profile-cancel"
    client.progress_reports.setdefault(token, [])
    request = asyncio.ensure_future(client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.profile", arguments=[{"uri": uri, "position": {"line": 4, "character": 4}}],
        work_done_token=token)))
    for _ in range(200):  # wait until the program is running its steps
        if any(getattr(p, "message", None) and "step" in p.message for p in client.progress_reports[token]):
            break
        await asyncio.sleep(0.1)
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    with pytest.raises(Exception, match="cancelled"):
        await asyncio.wait_for(request, timeout=30)
    runs = list((ws / ".stepscope" / "runs").iterdir())
    assert len(runs) == 1
    status = json.loads((runs[0] / "status.json").read_text())
    assert status["status"] == "cancelled"
    assert not (runs[0] / "report.json").exists()
    ps = subprocess.run(["pgrep", "-f", str(runs[0])], capture_output=True, text=True)
    assert ps.stdout.strip() == "", "the program is still running"


async def test_profile_of_a_file_without_a_step_is_a_clear_error(client: LanguageClient, ws: Path):
    path = ws / "plain.py"
    path.write_text("print('hello')\n")
    uri = _open(client, path)
    with pytest.raises(Exception, match="no loop or function in plain.py looks like a training or inference step; "
                                        "put the cursor inside the loop"):
        await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="stepscope.profile", arguments=[{"uri": uri, "position": {"line": 0, "character": 0}}]))
    with pytest.raises(Exception, match="expects one object"):
        await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="stepscope.profile", arguments=["not an object"]))
    assert not (ws / ".stepscope" / "runs").exists()


@pytest.mark.torch
async def test_profile_uses_the_launch_configuration_sent_by_the_editor(client: LanguageClient, ws: Path):
    script = ws / "configured.py"
    script.write_text(textwrap.dedent("""\
        import argparse, os
        import torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--steps", type=int, required=True)
        steps = parser.parse_args().steps
        assert os.environ["MODE"] == "fast" and os.getcwd().endswith("data")
        model = torch.nn.Linear(4, 4)
        for i in range(steps):
            model(torch.randn(2, 4)).sum().backward()
        """))
    (ws / "data").mkdir()
    uri = _open(client, script)
    launch = {"name": "train", "program": str(script), "args": ["--steps", "12"],
              "env": {"MODE": "fast"}, "cwd": str(ws / "data")}
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.profile",
        arguments=[{"uri": uri, "position": {"line": 8, "character": 8}, "launch": launch}]))
    assert [entry["line"] for entry in result["lines"]].count(8) == 1  # line 9, 0-based
    spec = json.loads((Path(result["runDir"]) / "spec.json").read_text())
    assert spec["argv"] == ["--steps", "12"]


@pytest.mark.torch
async def test_profile_takes_a_step_function_of_another_workspace_module(client: LanguageClient, ws: Path):
    (ws / "steps.py").write_text(textwrap.dedent("""\
        import torch


        class Runner:
            def __init__(self):
                self.model = torch.nn.Linear(4, 4)

            def step(self, x):
                self.model(x).sum().backward()
        """))
    script = ws / "run_steps.py"
    script.write_text("import torch\nfrom steps import Runner\nr = Runner()\nfor i in range(12):\n    r.step(torch.randn(2, 4))\n")
    uri = _open(client, script)
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.profile", arguments=[{"uri": uri, "function": "steps:Runner.step"}]))
    report = json.loads((Path(result["runDir"]) / "report.json").read_text())
    assert report["scenario"]["step"]["function"] == "Runner.step" and report["scenario"]["step"]["line"] == 8
    assert any(Path(x["file"]).name == "steps.py" and x["line"] == 9 for x in report["lines"])
    # the status bar says which step it is, and the def line's hover what its figure is: the whole call
    tooltip = result["status"]["tooltip"].replace("\\", "")  # Markdown, its punctuation escaped
    assert "the step: each call of Runner.step (steps.py:8)" in tooltip and "where its time goes: your code" in tooltip
    steps_uri = _open(client, ws / "steps.py")
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=steps_uri), position=types.Position(line=7, character=8)))
    assert hover is not None and "(the def line): the call of step from its first statement to its return" in \
        hover.contents.value.replace("\\", "")
    with pytest.raises(Exception, match="no function named 'Runner.jump' in steps.py"):
        await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="stepscope.profile", arguments=[{"uri": uri, "function": "steps:Runner.jump"}]))
    with pytest.raises(Exception, match="function argument must be a function's name"):
        await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="stepscope.profile", arguments=[{"uri": uri, "function": 3}]))


async def test_quick_fixes_come_with_the_diagnostic(client: LanguageClient, ws: Path):
    path = ws / "timing.py"
    path.write_text(textwrap.dedent("""\
        import time
        import torch
        model = torch.nn.Linear(4, 4)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(1000):  # a loop of ten passes or fewer is a warm-up: no SS101
            loss = model(torch.randn(2, 4)).sum()
            loss.backward()
            opt.step()
            print(loss.item())
        """))
    uri = _open(client, path)
    found = await _diagnostics(client, uri)
    (ss101,) = [d for d in found if d.code == "SS101"]
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=ss101.range,
        context=types.CodeActionContext(diagnostics=[ss101])))
    titles = [a.title for a in actions]
    assert "Ignore SS101 on this line" in titles
    ignore = next(a for a in actions if a.title == "Ignore SS101 on this line")
    (edit,) = ignore.edit.changes[uri]
    assert "stepscope: ignore[SS101]" in edit.new_text and edit.range.start.line == 8


async def test_incremental_edits_give_the_same_diagnostics_as_a_full_check(client: LanguageClient, ws: Path):
    from stepscope.rules import check_source

    base = (ws / "train_cpu.py").read_text()
    path = ws / "big.py"
    text = base + "".join(base.replace("def main", f"def main_{i}").split("import torch", 1)[1] for i in range(20))
    path.write_text(text)
    uri = _open(client, path, text)
    await _diagnostics(client, uri)
    lines = text.split("\n")
    item_rows = [i for i, line in enumerate(lines) if "running += loss.item()" in line]
    edits = [(item_rows[3], "running += loss.item()", "running += loss.detach()"),
             (item_rows[7], "running += loss.item()", "running += float(loss)"),
             (item_rows[3], "running += loss.detach()", "running += loss.item()")]
    for version, (row, old, new) in enumerate(edits, start=2):
        col = lines[row].index(old)
        lines[row] = lines[row].replace(old, new)
        del client.diagnostics[uri]
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=row, character=col),
                                  end=types.Position(line=row, character=col + len(old))),
                text=new)]))
        got = await _diagnostics(client, uri)
        expected = check_source("\n".join(lines), str(path))
        assert sorted((d.range.start.line, d.code) for d in got) == \
            sorted((d.line - 1, d.code) for d in expected)


SMALL_STEP = """\
import torch
model = torch.nn.Linear(32, 64)
for i in range(40):
    x = torch.randn(8, 32)
    y = model(x)
    y.sum().backward()
"""


def _profile_params(uri: str, profile: dict | None = None) -> types.ExecuteCommandParams:
    argument = {"uri": uri, "position": {"line": 4, "character": 4}, "python": sys.executable}
    if profile is not None:
        argument["profile"] = profile
    return types.ExecuteCommandParams(command="stepscope.profile", arguments=[argument])


def _report(result: dict) -> dict:
    return json.loads((Path(result["runDir"]) / "report.json").read_text())


def _open_small_step(client: LanguageClient, ws: Path) -> tuple[Path, str]:
    """small.py (SMALL_STEP) written in the workspace and opened in the editor: (path, uri)."""
    script = ws / "small.py"
    script.write_text(SMALL_STEP)
    return script, _open(client, script)


@pytest.mark.torch
async def test_profile_settings_from_initialization_set_the_schedule_and_the_options(
        client_with_profile_settings: LanguageClient, ws: Path):
    client = client_with_profile_settings
    script, uri = _open_small_step(client, ws)
    result = await client.workspace_execute_command_async(_profile_params(uri))
    report = _report(result)
    assert len(report["steps"]) == 3  # active: 3, not the default 5
    assert report["schedule"]["active"] == 3
    by_line = {entry["line"]: entry for entry in report["lines"] if Path(entry["file"]) == script}
    # shapes: true → each line carries the shapes of the ops it called (null when not recorded).
    assert all(isinstance(entry["shapes"], list) for entry in by_line.values())
    linear = [s for s in by_line[5]["shapes"] if s["op"] == "aten::linear"]
    assert linear and linear[0]["shapes"][0] == [8, 32]


@pytest.mark.torch
async def test_profile_settings_sent_with_the_command_apply_to_that_run_without_a_restart(
        client_with_profile_settings: LanguageClient, ws: Path):
    client = client_with_profile_settings
    _, uri = _open_small_step(client, ws)
    first = _report(await client.workspace_execute_command_async(_profile_params(uri)))
    # The user changes the settings; the editor sends the current values with the next run.
    second = _report(await client.workspace_execute_command_async(
        _profile_params(uri, {"active": 2, "warmup": 1, "shapes": False})))
    assert len(first["steps"]) == 3 and len(second["steps"]) == 2
    assert second["schedule"]["warmup"] == 1
    assert first["lines"] and all(entry["shapes"] is not None for entry in first["lines"])
    assert second["lines"] and all(entry["shapes"] is None for entry in second["lines"])


@pytest.mark.parametrize(("settings", "message"), [
    ({"active": "x"}, "stepscope.profile.active must be an integer ≥ 1, got 'x'"),
    ({"active": 0}, "stepscope.profile.active must be an integer ≥ 1, got 0"),
    ({"nproc": 0}, "stepscope.profile.nproc must be an integer ≥ 1, got 0"),
    ({"repeat": True}, "stepscope.profile.repeat must be an integer ≥ 1, got true"),
    ({"warmup": 1.5}, "stepscope.profile.warmup must be an integer ≥ 0, got 1.5"),
    ({"shapes": "yes"}, "stepscope.profile.shapes must be true or false, got 'yes'"),
    ({"timeout": -1}, "stepscope.profile.timeout must be a number of seconds ≥ 0 (0: no limit), got -1"),
    ({"activ": 3}, "stepscope.profile.activ is not a setting; the profile settings are wait, warmup, active,"),
])
async def test_a_bad_profile_setting_is_one_line_naming_the_setting(
        client: LanguageClient, ws: Path, settings: dict, message: str):
    uri = _open(client, ws / "train_cpu.py")
    with pytest.raises(Exception) as failure:
        await client.workspace_execute_command_async(_profile_params(uri, settings))
    text = str(failure.value)
    assert message in text and "\n" not in text and "Traceback" not in text
    assert not (ws / ".stepscope" / "runs").exists()  # refused before anything ran
    # The server is still serving.
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert lenses


@pytest.mark.torch
async def test_a_launch_configuration_that_runs_torchrun_profiles_every_rank(client: LanguageClient, ws: Path):
    shutil.copy(EXAMPLE.with_name("train_ddp.py"), ws / "train_ddp.py")
    uri = _open(client, ws / "train_ddp.py")
    # as the client sends a torchrun configuration that names this file: the launcher's own arguments,
    # then the program's
    launch = {"name": "ddp", "program": str(ws / "train_ddp.py"), "args": ["--steps", "10"],
              "launcher": {"module": "torch.distributed.run", "args": ["--nproc-per-node", "2"]}}
    argument = {"uri": uri, "position": {"line": 58, "character": 8}, "python": sys.executable, "launch": launch,
                "profile": {"wait": 0, "warmup": 1, "active": 3}}
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.profile", arguments=[argument]))
    report = _report(result)
    assert [entry["rank"] for entry in report["ranks"]] == [0, 1]
    assert report["scenario"]["distributed"]["launcher"] == (
        f"{sys.executable} -m torch.distributed.run --nproc-per-node 2")
    assert report["scenario"]["program"]["args"] == ["--steps", "10"]


@pytest.mark.parametrize(("launch", "message"), [
    ({"name": "ddp", "type": "debugpy", "module": "torch.distributed.run", "args": ["--nproc_per_node", "2", "x.py"]},
     "launch configuration 'ddp' runs torch.distributed.run without naming train_cpu.py among its arguments: give "
     "the launcher as `launcher` ({module, args}) and the script as the program"),
    ({"name": "ddp", "program": "train_cpu.py", "launcher": {"module": "srun", "args": []}},
     "launch configuration 'ddp': its launcher must be one of torch.distributed.run, torch.distributed.launch"),
    ({"name": "ddp", "program": "train_cpu.py", "launcher": {"module": "torch.distributed.run", "args": []}},
     "launch configuration 'ddp': a launcher and nproc > 1 cannot be combined: the launcher chooses how many "
     "processes to start (set stepscope.profile.nproc to 1)"),
])
async def test_a_launch_configuration_the_server_cannot_run_is_refused_in_one_line(
        client: LanguageClient, ws: Path, launch: dict, message: str):
    uri = _open(client, ws / "train_cpu.py")
    params = _profile_params(uri, {"nproc": 2})
    params.arguments[0]["launch"] = launch
    with pytest.raises(Exception) as failure:
        await client.workspace_execute_command_async(params)
    text = str(failure.value)
    assert message in text and "\n" not in text
    assert not (ws / ".stepscope" / "runs").exists()  # refused before anything ran
