"""The built wheel in a clean virtualenv without torch: `check` and `analyze` work there, and
`profile --python` runs the program in another interpreter that has torch."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def clean_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "-q", "-w", str(tmp / "dist")],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    wheel = next((tmp / "dist").glob("stepscope-*.whl"))
    venv.create(tmp / "venv", with_pip=True)
    bindir = tmp / "venv" / "bin"
    install = subprocess.run([str(bindir / "python"), "-m", "pip", "install", "-q", str(wheel)],
                             capture_output=True, text=True)
    assert install.returncode == 0, install.stderr
    return bindir


def test_clean_install_has_no_torch_and_checks_code(clean_install: Path, tmp_path: Path):
    no_torch = subprocess.run([str(clean_install / "python"), "-c", "import torch"], capture_output=True)
    assert no_torch.returncode != 0  # the package does not pull torch in
    shutil.copy(REPO / "examples" / "train_cpu.py", tmp_path / "train.py")
    r = subprocess.run([str(clean_install / "stepscope"), "check", "train.py", "--format", "json"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "SS101" in r.stdout


@pytest.mark.torch
def test_clean_install_profiles_with_an_interpreter_that_has_torch(clean_install: Path, tmp_path: Path):
    shutil.copy(REPO / "examples" / "train_cpu.py", tmp_path / "train.py")
    r = subprocess.run([str(clean_install / "stepscope"), "profile", "train.py", "--active", "3", "--json",
                        "--python", sys.executable], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["ms_per_step"] > 0
    # The report was analysed by the clean install, which then reads the same trace again.
    trace = report["traces"][0]
    again = subprocess.run([str(clean_install / "stepscope"), "analyze", trace, "--json"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["ms_per_step"] == pytest.approx(report["ms_per_step"])
