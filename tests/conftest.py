"""Shared fixtures: a throwaway workspace holding copies of the examples."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace folder (a git repo, like a user's project) with the examples copied in."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for f in EXAMPLES.glob("*.py"):
        shutil.copy(f, ws / f.name)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def run_stepscope(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the real `stepscope` command in a subprocess, as a user would."""
    return subprocess.run([sys.executable, "-m", "stepscope", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


#: tests that drive a real editor or browser (code-server and Chromium, Neovim): with `-n 2` they run
#: one at a time on one worker, so two browsers never share the two cores of a CI machine
EDITOR_TESTS = ("tests/vscode/", "tests/neovim/", "tests/panel/test_panel_browser.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = item.path.relative_to(REPO).as_posix() if item.path.is_relative_to(REPO) else ""
        if path.startswith(EDITOR_TESTS):
            item.add_marker(pytest.mark.xdist_group("editor"))


@pytest.fixture
def locked_out():
    """(run, folder) for permission errors: `run(*args)` runs `stepscope` as a user the file
    permissions apply to (root is not refused anything, so as root it runs as `nobody`), in a
    fresh `folder` every user can enter. Skipped, saying why, where neither can be had."""
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: file permissions cannot refuse anything")
    folder = Path(tempfile.mkdtemp(prefix="stepscope-perm-"))
    folder.chmod(0o755)
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*prefix, sys.executable, "-m", "stepscope", *args], cwd=folder, capture_output=True,
                              text=True, timeout=120, env={**os.environ, "HOME": str(folder)})

    yield run, folder
    for root, dirs, _files in os.walk(folder):  # each folder opened again before it is walked into
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
    shutil.rmtree(folder)
