"""Shared fixtures: a throwaway workspace holding copies of the examples."""

from __future__ import annotations

import shutil
import subprocess
import sys
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
