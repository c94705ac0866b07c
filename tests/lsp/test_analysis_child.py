"""The editor's analysis runs in a child process: the CLI's report, a one-line error when the child
dies, a cancel that ends it, and the user's environment kept out of it. Real child processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from stepscope.lsp import analysis_child

from ..analysis.kineto_synth import Synth, run_folder
from ..analysis.test_analysis_attribution import build
from .test_server import EXAMPLE, _initialize, _line_of, _open


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return run_folder(tmp_path, build(gpu=True))


def test_the_child_gives_the_report_the_cli_prints(run_dir: Path) -> None:
    cli = subprocess.run([sys.executable, "-m", "stepscope", "analyze", "--json", str(run_dir)],
                         capture_output=True, text=True, check=True)
    assert analysis_child.analyse(run_dir) == json.loads(cli.stdout)
    assert not (run_dir / "report.json").exists()  # the caller writes it


def test_a_child_that_dies_is_one_line_that_keeps_the_run_folder(run_dir: Path) -> None:
    before = sorted(p.name for p in run_dir.iterdir())
    child = analysis_child.AnalysisChild(run_dir)
    os.kill(child.pid, signal.SIGSEGV)  # as a fault in a compiled kernel would end it
    with pytest.raises(analysis_child.AnalysisFailed) as failed:
        child.result()
    said = str(failed.value)
    assert "the analysis stopped unexpectedly (SIGSEGV)" in said and str(run_dir) in said and "\n" not in said
    assert failed.value.exit_code == 128 + signal.SIGSEGV
    assert sorted(p.name for p in run_dir.iterdir()) == before


def test_cancelling_kills_the_child_at_once(run_dir: Path) -> None:
    cancel = threading.Event()
    child = analysis_child.AnalysisChild(run_dir)
    cancel.set()
    with pytest.raises(analysis_child.AnalysisCancelled, match="cancelled during the analysis; the run folder is kept"):
        child.result(cancel)
    assert child.process.returncode is not None  # reaped: nothing left running
    with pytest.raises(ProcessLookupError):
        os.killpg(child.pid, 0)


def test_a_trace_the_analysis_refuses_is_its_one_line_reason(tmp_path: Path) -> None:
    run = run_folder(tmp_path, Synth(devices=[]))
    (run / "trace.json").write_text('{"traceEvents": [')
    with pytest.raises(analysis_child.AnalysisFailed) as failed:
        analysis_child.analyse(run)
    said = str(failed.value)
    assert said.startswith("the trace could not be analysed: ") and "trace.json" in said and "\n" not in said
    assert failed.value.exit_code == 2


def test_the_child_runs_the_server_s_stepscope_not_one_on_the_user_s_path(run_dir: Path, tmp_path: Path,
                                                                           monkeypatch) -> None:
    impostor = tmp_path / "elsewhere" / "stepscope"
    impostor.mkdir(parents=True)
    (impostor / "__init__.py").write_text("raise SystemExit('the wrong stepscope was imported')\n")
    monkeypatch.setenv("PYTHONPATH", str(impostor.parent))
    report = analysis_child.analyse(run_dir)
    assert report["lines"] and report["schema_version"] == 1


_MODULES_SEEN = Path(os.environ.get("TMPDIR", "/tmp")) / f"stepscope-server-modules-{os.getpid()}.txt"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[
    sys.executable, "-c",
    "import atexit, sys\n"
    f"atexit.register(lambda: open({str(_MODULES_SEEN)!r}, 'w').write('\\n'.join(sorted(sys.modules))))\n"
    "from stepscope.lsp.server import start_stdio; start_stdio()"]))
async def recorded_server(lsp_client: LanguageClient, tmp_path: Path):
    _MODULES_SEEN.unlink(missing_ok=True)
    await _initialize(lsp_client, tmp_path, {"interpreter": sys.executable})
    lsp_client.shut_down = False
    yield  # the test shuts the server down itself, to read what it imported
    if not lsp_client.shut_down:  # the test failed before it could: never leave the server running
        await lsp_client.shutdown_session()


@pytest.mark.torch
async def test_the_language_server_profiles_and_serves_timelines_without_ever_loading_the_trace_engine(
        recorded_server: LanguageClient, tmp_path: Path) -> None:
    client = recorded_server
    shutil.copy(EXAMPLE, tmp_path / "train_cpu.py")
    text = (tmp_path / "train_cpu.py").read_text()
    uri = _open(client, tmp_path / "train_cpu.py")
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="stepscope.profile", arguments=[{"uri": uri, "position": {
            "line": _line_of(text, "loss.backward()"), "character": 8}, "profile": {"active": 2, "warmup": 1}}]))
    assert result["lines"] and (Path(result["runDir"]) / "report.json").is_file()
    # the trace panel's timeline: as written, and a range at a finer level (made in a child)
    whole = await client.protocol.send_request_async("stepscope/timeline", {"runId": result["runId"]})
    part = await client.protocol.send_request_async("stepscope/timeline", {
        "runId": result["runId"], "startUs": 0.0, "endUs": whole.window.duration_us / 2})
    # the range comes back at the timeline's resolution (ns, 3 decimals of a µs)
    assert whole.steps and part.range.end_us == pytest.approx(whole.window.duration_us / 2, abs=1e-3)
    await client.shutdown_session()  # the server has exited: its atexit record is written
    client.shut_down = True
    seen = _MODULES_SEEN.read_text().split()
    _MODULES_SEEN.unlink()
    assert "stepscope.lsp.server" in seen  # the record is the server's
    assert not [m for m in seen if m.startswith(("stepscope.trace", "stepscope.analysis.report"))], seen
