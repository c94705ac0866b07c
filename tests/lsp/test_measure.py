"""Measure This Step through the real language server (pytest-lsp) with real torch programs on the
CPU: the command, its lens, its settings, the measure document for the panel, and the verdict
between recorded runs (the same comparison as `stepscope runs compare`)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from stepscope.jsonio import plain
from stepscope.measurement.present import verdict_words

from ..capture.ddp_program import write_ddp_program
from .test_server import _initialize, _open

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "stepscope", "serve"])
MEASURE = {"warmup": 2, "passes": 6}  # few passes: the CPU of CI is shared

STEP = textwrap.dedent("""\
    import torch
    torch.manual_seed(0)
    model = torch.nn.Linear(32, 32)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for i in range(1000):
        loss = model(torch.randn(16, 32)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    """)
LOOP_LINE = 4  # 0-based: `for i in range(1000):`


def cli_text(ws: Path, a: str, b: str) -> str:
    """`stepscope runs compare A B` as a user reads it."""
    return subprocess.run([sys.executable, "-m", "stepscope", "runs", "compare", a, b], cwd=ws, capture_output=True,
                          text=True, check=True).stdout


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "measured project"
    root.mkdir()
    (root / "train.py").write_text(STEP)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, ws: Path):
    await _initialize(lsp_client, ws, {"interpreter": sys.executable, "profileCommand": "stepscope.profileStep",
                                       "measureCommand": "stepscope.measureStep",
                                       "measure": MEASURE})
    yield
    await lsp_client.shutdown_session()


async def _measure(client: LanguageClient, uri: str, token: str | None = None, **extra) -> dict:
    if token:
        client.progress_reports.setdefault(token, [])
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.measure",
        arguments=[{"uri": uri, "position": {"line": LOOP_LINE + 1, "character": 8}, **extra}],
        work_done_token=token))


async def test_the_lens_offers_measure_this_step_beside_profile_this_step(client: LanguageClient, ws: Path):
    uri = _open(client, ws / "train.py")
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert [(lens.range.start.line, lens.command.title, lens.command.command) for lens in lenses] == [
        (LOOP_LINE, "Profile this step", "stepscope.profileStep"),
        (LOOP_LINE, "Measure this step", "stepscope.measureStep")]
    assert lenses[1].command.arguments[0]["position"]["line"] == LOOP_LINE


FRAMEWORKS = textwrap.dedent("""\
    import lightning as L
    from transformers import Trainer as HFTrainer


    class LitModel(L.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self.net(batch).sum()
            return loss

        def backward(self, loss):
            loss.backward()


    trainer = L.Trainer(max_steps=10)
    trainer.fit(LitModel())
    HFTrainer(model=None).train()
    """)


async def test_the_lens_stands_over_step_functions_and_the_calls_that_run_them(client: LanguageClient, ws: Path):
    path = ws / "frameworks.py"
    path.write_text(FRAMEWORKS)
    uri = _open(client, path)
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    found = [(lens.range.start.line, lens.range.start.character, lens.command.title, lens.command.command,
              lens.command.arguments[0].get("function")) for lens in lenses]
    assert found == [
        # the LightningModule's training step (its `backward` hook is no step)
        (5, 4, "Profile this step", "stepscope.profileStep", "LitModel.training_step"),
        (5, 4, "Measure this step", "stepscope.measureStep", "LitModel.training_step"),
        # the call that runs it, and the HF Trainer's, named as `--function` takes them
        (14, 0, "Profile LitModel.training_step", "stepscope.profileStep", "LitModel.training_step"),
        (14, 0, "Measure LitModel.training_step", "stepscope.measureStep", "LitModel.training_step"),
        (15, 0, "Profile Trainer.training_step", "stepscope.profileStep", "transformers.trainer:Trainer.training_step"),
        (15, 0, "Measure Trainer.training_step", "stepscope.measureStep", "transformers.trainer:Trainer.training_step"),
    ]
    assert all(lens.command.arguments[0]["uri"] == uri for lens in lenses)
    assert lenses[2].command.arguments[0]["position"] == {"line": 14, "character": 0}
    # the step the lens (or a cursor in the method) names, for the progress's title
    step = await _request(client, "stepscope/resolveStep", plain(lenses[2].command.arguments[0]))
    assert step["function"] == "LitModel.training_step" and step["line"] == 5
    assert step["title"] == "each call of LitModel.training_step (frameworks.py:6)"
    at_cursor = await _request(client, "stepscope/resolveStep", {"uri": uri, "position": {"line": 7, "character": 8}})
    assert at_cursor == step


# A LightningModule-shaped class and the loop a framework would run, in a module of the workspace:
# the file measured has no loop of its own.
MODULE = textwrap.dedent("""\
    import torch

    from minitrainer import fit


    class LitModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(32, 1)

        def training_step(self, batch):
            loss = self.net(batch).pow(2).mean()
            return {"loss": loss, "log": {"batch": len(batch)}}


    fit(LitModel(), steps=40)
    """)
MINITRAINER = textwrap.dedent("""\
    import torch


    def fit(module, steps):
        opt = torch.optim.SGD(module.parameters(), lr=0.05)
        data = torch.randn(16, 32)
        for _ in range(steps):
            out = module.training_step(data)
            out["loss"].backward()
            opt.step()
            opt.zero_grad()
    """)


@pytest.mark.torch
async def test_the_lens_of_a_step_function_measures_each_call_and_what_it_returned(client: LanguageClient, ws: Path):
    (ws / "minitrainer.py").write_text(MINITRAINER)
    path = ws / "module.py"
    path.write_text(MODULE)
    uri = _open(client, path)
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    measure = next(lens for lens in lenses if lens.command.title == "Measure this step")
    assert measure.command.arguments[0]["function"] == "LitModel.training_step"
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.measure", arguments=[plain(measure.command.arguments[0])]))
    doc = await _request(client, "stepscope/measure", {"runId": Path(result["runDir"]).name})
    assert doc["scope"]["step"]["function"] == "LitModel.training_step" and len(doc["raw_ms"]) == MEASURE["passes"]
    # the value of each pass is the loss the call returned, falling as the module trains
    assert doc["value"] == "return" and len(doc["values"]) == MEASURE["passes"]
    assert doc["values"][-1] < doc["values"][0]
    assert doc["value_words"].startswith("return value ") and doc["call_words"] is not None


@pytest.mark.torch
async def test_measure_times_the_step_records_it_and_gives_the_panel_its_distribution(
        client: LanguageClient, ws: Path):
    script = ws / "train.py"
    uri = _open(client, script)
    result = await _measure(client, uri, "measure-1")
    # the editor's result: the median, its spread, the noise flag, the machine, all worded by the server
    assert result["kind"] == "measure" and result["msPerStep"] > 0 and result["passes"] == MEASURE["passes"]
    assert result["iqrMs"] >= 0 and isinstance(result["noisy"], bool)
    assert "ms/step without the profiler (median of 6 passes; IQR" in result["summary"]
    assert result["machine"] in result["summary"] and "CPU" in result["machine"]
    assert result["status"]["text"].startswith(f"{result['summary'].split()[0]} ms/step measured")
    assert "warm-up passes apart" in result["status"]["tooltip"]
    kinds = [p.kind for p in client.progress_reports["measure-1"]]
    assert kinds[0] == "begin" and kinds[-1] == "end"
    assert any("pass 8/8 (timed)" in (getattr(p, "message", "") or "") for p in client.progress_reports["measure-1"])
    run_dir = Path(result["runDir"])
    assert run_dir.parent == ws / ".stepscope" / "runs"
    assert json.loads((run_dir / "status.json").read_text())["status"] == "complete"
    assert script.read_text() == STEP  # the user's file is never modified
    assert any("real updates" in m.message for m in client.messages)  # the first run says it runs for real

    # the runs view lists it as a measure run, from the same history the CLI reads
    runs = (await _request(client, "stepscope/runs", {}))["runs"]
    assert [(r["id"], r["kind"], r["status"]) for r in runs] == [(run_dir.name, "measure", "complete")]
    assert runs[0]["msPerStep"] == pytest.approx(result["msPerStep"])
    listed = subprocess.run([sys.executable, "-m", "stepscope", "runs", "list", "--json"], cwd=ws,
                            capture_output=True, text=True, check=True)
    assert [r["id"] for r in json.loads(listed.stdout)["runs"]] == [run_dir.name]

    # the panel's document: raw passes, warm-ups apart, the figures
    doc = await _request(client, "stepscope/measure", {"runId": run_dir.name})
    assert len(doc["raw_ms"]) == MEASURE["passes"] and len(doc["warmup_ms"]) == MEASURE["warmup"]
    assert doc["median_ms"] == pytest.approx(result["msPerStep"])
    assert doc["min_ms"] <= doc["p10_ms"] <= doc["median_ms"] <= doc["p90_ms"] <= doc["max_ms"]
    assert doc["run_id"] == run_dir.name and "verdict" not in doc
    # what the step computed, in the words of the CLI and the tooltip (the panel shows them as text)
    assert doc["value_words"].startswith("loss ") and "(first → last of" in doc["value_words"]
    assert doc["call_words"] is None  # a loop's step: no call apart from the step

    # a second measure; compared from the runs view: the verdict with its interval, as `runs compare` gives it
    second = await _measure(client, uri)
    a, b = run_dir.name, Path(second["runDir"]).name
    answer = (await _request(client, "stepscope/compareRuns", {"a": a, "b": b}))
    cli = subprocess.run([sys.executable, "-m", "stepscope", "runs", "compare", a, b, "--json"], cwd=ws,
                         capture_output=True, text=True, check=True)
    expected = json.loads(cli.stdout)
    assert answer["comparison"]["verdict"] == expected["verdict"]
    assert answer["comparison"]["ci95"] == pytest.approx(expected["ci95"])
    assert answer["comparison"]["ratio"] == pytest.approx(expected["ratio"])
    # the verdict with the margin it was called against, in the CLI's words
    words = verdict_words(expected)
    assert "%" in words and words in cli_text(ws, a, b)
    assert f"**{words}**" in answer["markdown"] and "95% interval" in answer["markdown"]
    both = (await _request(client, "stepscope/measure", {"runId": b, "against": a}))
    assert both["verdict"] == expected["verdict"] and both["ci95"] == pytest.approx(expected["ci95"])
    assert both["verdict_detail"] == expected["verdict_detail"] and both["margin"] == expected["margin"]
    assert both["verdict_words"] == words  # what the panel shows
    assert sorted(both["compare_raw_ms"]) == pytest.approx(sorted(doc["raw_ms"]))
    assert both["compare_label"] == f"run {a}"


@pytest.mark.torch
async def test_a_launch_configuration_that_runs_torchrun_measures_every_rank(client: LanguageClient, ws: Path):
    write_ddp_program(ws, "ddp.py")
    uri = _open(client, ws / "ddp.py")
    # as the client sends a torchrun configuration that names this file (the same one Profile This Step runs)
    launch = {"name": "ddp", "program": str(ws / "ddp.py"),
              "launcher": {"module": "torch.distributed.run", "args": ["--standalone", "--nproc-per-node", "2"]}}
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.measure", arguments=[{"uri": uri, "position": {"line": 16, "character": 8},
                                                 "python": sys.executable, "launch": launch}]))
    assert f"(median of {MEASURE['passes']} passes of rank " in result["summary"]
    assert ", the slowest of 2 ranks;" in result["summary"]
    assert "\n\nranks: rank 0 " in result["status"]["tooltip"]
    doc = await _request(client, "stepscope/measure", {"runId": result["runId"]})
    assert [entry["rank"] for entry in doc["ranks"]] == [0, 1] and doc["scope"]["world_size"] == 2
    assert doc["ranks_words"].startswith("rank 0 ") and "slowest: rank " in doc["ranks_words"]
    assert doc["value_words"].startswith("loss of rank 0 ")


@pytest.mark.torch
async def test_runs_that_differ_in_scope_are_refused_unless_forced(client: LanguageClient, ws: Path):
    uri = _open(client, ws / "train.py")
    first = await _measure(client, uri)
    other = await _measure(client, uri, measure={"warmup": 3})
    a, b = Path(first["runDir"]).name, Path(other["runDir"]).name
    with pytest.raises(Exception, match=r"^not comparable: the runs differ in warm-up passes \(2 vs 3\)$"):
        await _request(client, "stepscope/compareRuns", {"a": a, "b": b})
    forced = (await _request(client, "stepscope/compareRuns", {"a": a, "b": b,
                                                                                       "force": True}))
    assert forced["comparison"]["differences"] and "compared although they differ" in forced["markdown"]


@pytest.mark.torch
async def test_a_measure_run_beside_a_profile_run_compares_the_unprofiled_steps(client: LanguageClient, ws: Path):
    uri = _open(client, ws / "train.py")
    measured = await _measure(client, uri)
    profiled = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.profile", arguments=[{"uri": uri, "position": {"line": LOOP_LINE + 1, "character": 8}}]))
    a, b = Path(profiled["runDir"]).name, Path(measured["runDir"]).name
    runs = {r["id"]: r["kind"] for r in (await _request(client, "stepscope/runs", {}))["runs"]}
    assert runs == {a: "profile", b: "measure"}
    # what a profile run has to set beside a measure run is its steps timed without the profiler after
    # its window: a different kind of run, so refused unless forced, saying so in one line
    with pytest.raises(Exception, match=r"^not comparable: the runs differ in kind of run \(profile vs measure\)"):
        await _request(client, "stepscope/compareRuns", {"a": a, "b": b})
    forced = await _request(client, "stepscope/compareRuns", {"a": a, "b": b, "force": True})
    assert "steps timed without the profiler after its window" in forced["markdown"]
    assert forced["comparison"]["baseline"]["kind"] == "profile"
    assert forced["comparison"]["verdict"] in ("faster", "slower", "no detectable difference")


async def test_a_bad_measure_setting_is_one_line_naming_it_and_runs_nothing(client: LanguageClient, ws: Path):
    uri = _open(client, ws / "train.py")
    with pytest.raises(Exception, match=r"stepscope\.measure\.passes must be an integer ≥ 1, got 0"):
        await _measure(client, uri, measure={"passes": 0})
    with pytest.raises(Exception, match=r"stepscope\.measure\.active is not a setting; the measure settings are "
                                        r"warmup, passes, seed, runs, tolerance"):
        await _measure(client, uri, measure={"active": 3})
    assert not (ws / ".stepscope" / "runs").exists()


@pytest.mark.torch
async def test_a_failed_measure_says_why_in_one_line_and_keeps_the_earlier_run(client: LanguageClient, ws: Path):
    script = ws / "train.py"
    uri = _open(client, script)
    good = await _measure(client, uri)
    script.write_text(STEP.replace("opt.zero_grad()", "opt.zero_grad()\n    if i == 4: raise RuntimeError('bad batch')"))
    with pytest.raises(Exception, match="bad batch") as failed:
        await _measure(client, uri)
    assert "\n" not in str(failed.value)
    runs = {r["id"]: r for r in (await _request(client, "stepscope/runs", {}))["runs"]}
    assert runs[Path(good["runDir"]).name]["status"] == "complete"
    assert sorted(r["status"] for r in runs.values()) == ["complete", "failed"]
    with pytest.raises(Exception, match="has no measurement: it ended failed"):
        failed_id = next(i for i, r in runs.items() if r["status"] == "failed")
        await _request(client, "stepscope/measure", {"runId": failed_id})


@pytest.mark.torch
async def test_cancelling_a_measure_stops_the_program(client: LanguageClient, ws: Path):
    slow = ws / "slow.py"
    slow.write_text(STEP.replace("opt.zero_grad()", "opt.zero_grad()\n    __import__('time').sleep(0.5)"))
    uri = _open(client, slow)
    token = "measure-cancel"
    client.progress_reports.setdefault(token, [])
    request = asyncio.ensure_future(_measure(client, uri, token))
    for _ in range(300):  # until the passes run
        if any("pass" in (getattr(p, "message", None) or "") for p in client.progress_reports[token]):
            break
        await asyncio.sleep(0.1)
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    with pytest.raises(Exception, match="cancelled"):
        await asyncio.wait_for(request, timeout=30)
    (run,) = list((ws / ".stepscope" / "runs").iterdir())
    assert json.loads((run / "status.json").read_text())["status"] == "cancelled"
    assert subprocess.run(["pgrep", "-f", str(run)], capture_output=True, text=True).stdout.strip() == ""


async def _request(client: LanguageClient, method: str, params: dict):
    return plain(await client.protocol.send_request_async(method, params))
