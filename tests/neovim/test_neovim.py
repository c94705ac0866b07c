"""Stepscope's server in a second real editor: headless Neovim (its built-in LSP client)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def _nvim() -> str:
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.fail("nvim is not installed: run `bash tools/setup-tools.sh` (it installs Debian's neovim)")
    return nvim


def test_neovim_shows_the_sync_diagnostic_and_lenses_it_can_run(tmp_path: Path):
    nvim = _nvim()
    shutil.copy(REPO / "examples" / "train_cpu.py", tmp_path / "train.py")
    out = tmp_path / "got.json"
    env = {**os.environ, "HOME": str(tmp_path), "TMPDIR": str(tmp_path), "STEPSCOPE_NVIM_OUT": str(out),
           "STEPSCOPE_SERVER_CMD": json.dumps([sys.executable, "-m", "stepscope", "serve"])}
    r = subprocess.run([nvim, "--headless", "--clean", "-u", str(HERE / "client.lua"), "train.py"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert out.exists(), f"Neovim wrote nothing (exit {r.returncode}): {r.stderr[-2000:]}"
    got = json.loads(out.read_text())
    text = (tmp_path / "train.py").read_text().splitlines()
    item_line = next(i for i, line in enumerate(text) if "running += loss.item()" in line)
    loop_line = next(i for i, line in enumerate(text) if "for x, y in loader:" in line)
    assert [(d["line"], d["code"]) for d in got["diagnostics"]] == [(item_line, "SS101")]
    assert [(lens["line"], lens["title"]) for lens in got["lenses"]] == [
        (loop_line, "Profile this step"), (loop_line, "Measure this step")]
    # the server's own commands: Neovim runs them through the server (the torch test below does)
    assert all(lens["command"] in got["server_commands"] for lens in got["lenses"]), got


@pytest.mark.torch
def test_neovim_profiles_the_step_and_gets_the_hover_and_inlay_hints_of_its_lines_also_after_an_edit(
        tmp_path: Path):
    nvim = _nvim()
    shutil.copy(REPO / "examples" / "train_cpu.py", tmp_path / "train.py")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    text = (tmp_path / "train.py").read_text().splitlines()
    backward = next(i for i, line in enumerate(text) if "loss.backward()" in line)
    loop_line = next(i for i, line in enumerate(text) if "for x, y in loader:" in line)
    out = tmp_path / "got.json"
    env = {**os.environ, "HOME": str(tmp_path), "TMPDIR": str(tmp_path), "STEPSCOPE_NVIM_OUT": str(out),
           "STEPSCOPE_SERVER_CMD": json.dumps([sys.executable, "-m", "stepscope", "serve"]),
           "STEPSCOPE_TORCH_PYTHON": sys.executable,
           "STEPSCOPE_HOVER_LINE": str(backward),
           "STEPSCOPE_EDIT_LINE": str(loop_line), "STEPSCOPE_INSERT_AT": str(loop_line)}
    r = subprocess.run([nvim, "--headless", "--clean", "-u", str(HERE / "profile_hover.lua"), "train.py"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.exists(), f"Neovim wrote nothing (exit {r.returncode}): {r.stderr[-2000:]}"
    got = json.loads(out.read_text())
    assert got["lens_command"] == "stepscope.profile" and got["profile_error"] is None, got
    assert " ms/step without the profiler (" in got["summary"] and " profiled) on CPU only, host " in got["summary"]
    # the hover Neovim shows is the server's: the line's figures, its run and machine
    assert got["hover"] and "- wall: " in got["hover"] and "share of the mean step" in got["hover"], got["hover"]
    assert "run `" in got["hover"] and "host" in got["hover"]
    hinted = {hint["line"]: hint["label"] for hint in got["hints"]}
    assert backward in hinted and "ms/step" in hinted[backward]
    assert hinted[backward].strip().split(" ms/step")[0] in got["hover"]  # the label's figure is the hover's
    # After the edit (the loop's header changed, two lines inserted above it): the header has no hint,
    # every other line keeps its own, those below the inserted lines two lines down.
    after = {hint["line"]: hint["label"] for hint in got["hints_after_edit"]}
    expected = {line + 2 if line > loop_line else line: label for line, label in hinted.items() if line != loop_line}
    assert loop_line in hinted and backward in hinted and after == expected, (hinted, after)
