"""The trace panel's front end: its build, its unit tests (node --test) and its browser tests.

They need Node (the tools' Node 24, else one on PATH), the repository's node_modules (`npm ci`), and
for the browser tests playwright-core (tools/setup-tools.sh) and Debian's chromium; each is skipped,
with the reason, where that is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOLS = Path(os.environ.get("STEPSCOPE_TOOLS", REPO / ".cache" / "tools"))
PLAYWRIGHT_CORE = TOOLS / "drivers" / "node_modules" / "playwright-core"
CHROMIUM = Path("/usr/bin/chromium")
BUILT_TESTS = REPO / ".cache" / "panel-tests"
RESULTS = REPO / "test-results" / "panel"


def node() -> str | None:
    bundled = TOOLS / "node24" / "node_modules" / ".bin" / "node"
    return str(bundled) if bundled.exists() else shutil.which("node")


@pytest.fixture(scope="session")
def panel_build() -> str:
    """Builds panel/dist and the tests' bundles once; the Node that built them."""
    exe = node()
    if exe is None:
        pytest.skip("no Node to build the trace panel (tools/setup-tools.sh installs Node 24)")
    if not (REPO / "node_modules" / "esbuild").is_dir():
        pytest.skip("node_modules is missing: run `npm ci` to build the trace panel")
    build = subprocess.run([exe, str(REPO / "panel" / "build.mjs"), "--tests"], cwd=REPO, capture_output=True, text=True,
                           timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    return exe
