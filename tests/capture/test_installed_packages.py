"""A step in an installed package: `--function module:qualname` names a function of a package the
program's interpreter imports (found there, without importing it), the agent instruments that module
where it lives, the run folder stays in the user's workspace and the user's own lines stay in the
report. The package here is a folder named site-packages on PYTHONPATH, as an environment lays one out."""

from __future__ import annotations

import importlib.machinery
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from ..analysis.invariants import violations
from ..conftest import run_stepscope
from stepscope.capture.step import resolve_function
from stepscope.errors import NoStepError

LOOP = """\
    import torch


    def scaled(x):
        return x * 2


    def train_step(model, optimizer, x):
        loss = model(x).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss.detach()


    def fit(model, data, steps):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        for i in range(steps):
            x = data[i % len(data)]
            train_step(model, optimizer, scaled(x))
    """
MODEL = """\
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(64, 256)
            self.b = nn.Linear(256, 8)

        def forward(self, x):
            h = self.a(x).relu()
            return self.b(h)
    """
TRAIN = """\
    import torch
    from pkgloop.loop import fit
    from model import Net

    data = [torch.randn(32, 64) for _ in range(4)]
    fit(Net(), data, 30)
    """


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def installed(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """(workspace, site-packages): a package `pkgloop` installed outside the workspace."""
    site = tmp_path / "env" / "lib" / "site-packages"
    _write(site / "pkgloop" / "__init__.py", "")
    _write(site / "pkgloop" / "loop.py", LOOP)
    (site / "pkgloop" / ("fast" + importlib.machinery.EXTENSION_SUFFIXES[0])).write_bytes(b"")
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    _write(ws / "model.py", MODEL)
    _write(ws / "train.py", TRAIN)
    monkeypatch.setenv("PYTHONPATH", str(site))
    return ws, site


def test_a_module_of_an_installed_package_is_found_in_the_programs_interpreter(installed) -> None:
    ws, site = installed
    found = resolve_function(ws / "train.py", "pkgloop.loop:train_step", ws, ws, sys.executable)
    assert (found.file, found.qualname, found.line, found.package) == (
        (site / "pkgloop" / "loop.py").resolve(), "train_step", 8, "pkgloop")


def test_a_module_that_is_nowhere_names_the_workspace_and_the_interpreter_once(installed) -> None:
    ws, _ = installed
    with pytest.raises(NoStepError) as e:
        resolve_function(ws / "train.py", "pkgloop.gone:step", ws, ws, sys.executable)
    assert e.value.exit_code == 6
    assert str(e.value) == (f"--function 'pkgloop.gone:step': no module 'pkgloop.gone' under {ws.resolve()} "
                            f"nor in {sys.executable}")
    with pytest.raises(NoStepError, match=r"pkgloop.loop is a module, not a package"):
        resolve_function(ws / "train.py", "pkgloop.loop.inner:step", ws, ws, sys.executable)
    with pytest.raises(NoStepError, match=r"it is compiled code \(.*fast.*\): only Python source can be instrumented"):
        resolve_function(ws / "train.py", "pkgloop.fast:step", ws, ws, sys.executable)


@pytest.mark.torch
def test_a_step_function_of_an_installed_package_keeps_the_run_and_the_users_lines_in_the_workspace(installed) -> None:
    ws, site = installed
    r = run_stepscope("profile", "train.py", "--function", "pkgloop.loop:train_step", "--wait", "1", "--warmup", "1",
                      "--active", "3", "--json", cwd=ws)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert violations(report) == []
    run = Path(report["traces"][0]).parent
    assert run.parent == ws / ".stepscope" / "runs" and run.name.split("-")[1] == "train"
    assert not any(p.name == ".stepscope" for p in site.rglob("*"))
    loop = str((site / "pkgloop" / "loop.py").resolve())
    lines = {(x["file"], x["line"]) for x in report["lines"]}
    assert {(str(ws / "model.py"), 11), (str(ws / "model.py"), 12)} <= lines  # the user's model, below the package
    assert {(loop, n) for n in (9, 10, 11, 12)} <= lines  # the step's own statements, where they live
    assert not any(f == loop and n == 5 for f, n in lines)  # the package's other functions are left alone
    table = json.loads((run / "files.json").read_text())
    assert table["files"]["f0"] == loop and table["packages"] == {"f0": "pkgloop"}
    split = {(p["owner"], p["package"], p["role"]) for p in report["time_split"]["parts"]}
    assert ("you", None, "lines") in split and ("package", "pkgloop", "step") in split
    assert ("package", "pkgloop", "caller") in split  # fit(), which calls the step, is the package's too
    assert report["step_definition"]["caller"]["module"] == "pkgloop.loop"


@pytest.mark.torch
def test_a_loop_inside_an_installed_package_keeps_the_run_and_the_users_lines_in_the_workspace(installed) -> None:
    ws, site = installed
    loop = site / "pkgloop" / "loop.py"
    r = run_stepscope("profile", str(loop), "--line", "19", "--entry", "train.py", "--wait", "1", "--warmup", "1",
                      "--active", "3", "--json", cwd=ws)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert Path(report["traces"][0]).parent.parent == ws / ".stepscope" / "runs"
    lines = {(x["file"], x["line"]) for x in report["lines"]}
    assert {(str(ws / "model.py"), 11), (str(ws / "model.py"), 12)} <= lines
    assert report["step_definition"]["kind"] == "loop" and report["step_definition"]["package"] == "pkgloop"
    assert any(p["package"] == "pkgloop" and p["role"] == "loop" for p in report["time_split"]["parts"])


@pytest.mark.torch
def test_a_step_in_a_module_imported_before_the_program_is_refused_with_the_reason(installed) -> None:
    ws, _ = installed
    r = run_stepscope("profile", "train.py", "--function", "torch.optim.sgd:SGD.step", cwd=ws)
    assert r.returncode == 6, r.stderr
    assert "the step's module torch.optim.sgd was imported before the program started" in r.stderr.splitlines()[-1]
