"""A window opened on a subfolder of a repository sees the runs the CLI made from that subfolder:
the CLI records them in the repository's `.stepscope/` (its root), and the runs view, the figures
and the labels read them from there."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from .test_runs import _figures, _request
from .test_server import EXAMPLE, _initialize, _open

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "stepscope", "serve"])


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "sub").mkdir(parents=True)
    shutil.copy(EXAMPLE, root / "sub" / "train_cpu.py")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, repo: Path):
    await _initialize(lsp_client, repo / "sub", {"interpreter": sys.executable})
    yield
    await lsp_client.shutdown_session()


@pytest.mark.torch
async def test_runs_the_cli_made_from_a_subfolder_are_seen_by_a_window_on_that_subfolder(client: LanguageClient,
                                                                                          repo: Path):
    made = subprocess.run([sys.executable, "-m", "stepscope", "profile", "train_cpu.py", "--active", "2",
                           "--warmup", "1", "--json", "--", "--steps", "8"], cwd=repo / "sub",
                          capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    (run_dir,) = (repo / ".stepscope" / "runs").iterdir()  # recorded in the repository's root
    assert not (repo / "sub" / ".stepscope").exists()

    (run,) = (await _request(client, "stepscope/runs", {}))["runs"]
    assert run["id"] == run_dir.name and run["script"] == "sub/train_cpu.py"
    uri = _open(client, repo / "sub" / "train_cpu.py")
    await _request(client, "stepscope/showRun", {"runId": run["id"]})  # opened from the runs view
    shown = await _figures(client, uri)
    assert shown["runId"] == run_dir.name and shown["lines"], shown
    assert json.loads(made.stdout)["ms_per_step"] > 0
