"""`measure --against REV`: the revision and the working tree in alternating processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stepscope.history.store import History
from tests.conftest import run_stepscope

from .programs import SLEEPY, commit, loop_line, write

pytestmark = [pytest.mark.torch, pytest.mark.slow]


def git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(ws), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(workspace: Path) -> Path:
    write(workspace, "sleepy.py", SLEEPY)
    commit(workspace, "the step")
    return workspace


def _state(ws: Path):
    return git(ws, "status", "--porcelain"), git(ws, "diff", "--cached"), git(ws, "rev-parse", "HEAD")


def against(ws: Path, *args: str):
    script = ws / "sleepy.py"
    return run_stepscope("measure", "sleepy.py", "--line", str(loop_line(script)), "--against", "HEAD",
                         "--warmup", "2", "--passes", "20", "--json", *args, cwd=ws, timeout=900)


def test_a_slower_working_tree_is_called_slower_and_nothing_of_the_user_is_touched(repo: Path):
    script = repo / "sleepy.py"
    # the working tree's change: ten times the pause, and an edit above the loop that moves it
    script.write_text(SLEEPY.replace('default=0.004', 'default=0.04').replace("import time\n",
                                                                               "import time\n\nSCALE = 1\n"))
    (repo / "untracked.txt").write_text("mine")
    before = _state(repo)
    r = against(repo)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "slower" and doc["ratio"] > 3
    assert doc["method"]["resampling"].startswith("interleaved pairs")
    assert doc["method"]["processes"] == [3, 3]  # --runs defaults to 3 per side with --against
    assert doc["against"]["rev"] == "HEAD" and doc["against"]["commit"] == git(repo, "rev-parse", "HEAD").strip()
    assert doc["values_match"] is True
    assert _state(repo) == before and (repo / "untracked.txt").read_text() == "mine"
    assert len(git(repo, "worktree", "list").splitlines()) == 1  # the revision's checkout is gone
    with History.open(repo) as h:
        row = h.get(Path(doc["run_dir"]).name)
        baseline = h.get(doc["baseline"]["run"])
    assert row["verdict"] == "slower" and row["interleaved"] is True and row["baseline"] == baseline["id"]
    assert baseline["git_commit"] == doc["against"]["commit"]
    again = json.loads(run_stepscope("runs", "compare", baseline["id"], row["id"], "--json", cwd=repo).stdout)
    assert again["ci95"] == doc["ci95"] and again["verdict"] == doc["verdict"]  # the same verdict, reproduced


def test_a_change_to_a_comment_shows_no_detectable_difference(repo: Path):
    script = repo / "sleepy.py"
    script.write_text(SLEEPY.replace("for step in", "# one step per iteration\nfor step in"))
    r = against(repo)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "no detectable difference"
    assert doc["ci95"][0] <= 1.0 <= doc["ci95"][1]
    assert doc["values_match"] is True


def test_a_change_to_the_results_is_said(repo: Path):
    script = repo / "sleepy.py"
    script.write_text(SLEEPY.replace("lr=0.05", "lr=0.2"))
    doc = json.loads(against(repo).stdout)
    assert doc["values_match"] is False
    assert doc["values_check"]["first_difference"] == 0 or doc["values_check"]["first_difference"] == 1


def test_a_revision_without_the_script_is_refused(repo: Path):
    write(repo, "other.py", SLEEPY)
    r = run_stepscope("measure", "other.py", "--against", "HEAD", cwd=repo)
    assert r.returncode == 2 and "other.py" in r.stderr and "HEAD" in r.stderr
    assert len(git(repo, "worktree", "list").splitlines()) == 1


def test_a_cancel_stops_the_processes_and_removes_the_checkout(repo: Path):
    script = repo / "sleepy.py"
    p = subprocess.Popen([sys.executable, "-m", "stepscope", "measure", "sleepy.py", "--line",
                          str(loop_line(script)), "--against", "HEAD", "--passes", "400", "--", "--steps", "1000"],
                         cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
    worktrees = repo / ".stepscope" / "worktrees"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (worktrees.is_dir() and any(worktrees.iterdir())):
        time.sleep(0.2)
    time.sleep(3)  # a process of one side is running
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    assert "cancelled" in err
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    assert not any(worktrees.iterdir())


def test_a_revision_whose_program_fails_is_named_and_its_checkout_removed(workspace: Path):
    broken = SLEEPY.replace("    time.sleep(args.pause)\n",
                            "    time.sleep(args.pause)\n    if step == 4:\n        raise RuntimeError('broken at step 4')\n")
    write(workspace, "sleepy.py", broken)
    commit(workspace, "a broken step")
    write(workspace, "sleepy.py", SLEEPY)  # the working tree fixes it
    before = _state(workspace)
    r = against(workspace)
    assert r.returncode == 3, r.stderr
    reason = r.stderr.strip().splitlines()[-1]
    assert "the revision HEAD" in reason and "RuntimeError" in reason
    assert len(git(workspace, "worktree", "list").splitlines()) == 1
    assert not any((workspace / ".stepscope" / "worktrees").iterdir())
    assert _state(workspace) == before and (workspace / "sleepy.py").read_text() == SLEEPY


# A step function in a module of the workspace, called by the entry script's loop.
STEP_MODULE = '''import time

import torch


def step(model, opt, x, y, pause):
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    time.sleep(pause)
    return loss
'''

STEP_ENTRY = '''import argparse

import torch

from training.steps import step

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=40)
args = p.parse_args()
torch.manual_seed(0)
model = torch.nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(32, 16)
y = torch.randn(32, 1)
for i in range(args.steps):
    step(model, opt, x, y, 0.004)
'''


# a path (`training/steps.py:step`) resolves as the module does: resolve_function is tested apart
@pytest.mark.parametrize("name", ["step", "training.steps:step"])
def test_a_step_function_of_another_module_is_found_at_the_revision_too(workspace: Path, name: str):
    (workspace / "training").mkdir()
    write(workspace, "training/__init__.py", "")
    write(workspace, "training/steps.py", STEP_MODULE)
    write(workspace, "train.py", STEP_ENTRY)
    commit(workspace, "a step function in its own module")
    # the working tree's change, in the step's module only: ten times the pause, and a line
    # above the function that moves its definition
    write(workspace, "training/steps.py",
          STEP_MODULE.replace("time.sleep(pause)", "time.sleep(pause * 10)").replace(
              "import torch\n", "import torch\n\nSCALE = 1\n"))
    before = _state(workspace)
    r = run_stepscope("measure", "train.py", "--function", name, "--against", "HEAD", "--warmup", "2",
                      "--passes", "20", "--json", cwd=workspace, timeout=900)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "slower" and doc["ratio"] > 3
    # the step function's returned loss, compared pass by pass: the change altered the time, not the results
    assert doc["value"] == "return" and doc["values_match"] is True and len(doc["values"]) == 20
    assert doc["against"]["commit"] == git(workspace, "rev-parse", "HEAD").strip()
    assert _state(workspace) == before
    assert len(git(workspace, "worktree", "list").splitlines()) == 1
    # each side measured the function in its own tree, at its own definition line
    def_line = lambda text: text.splitlines().index("def step(model, opt, x, y, pause):") + 1  # noqa: E731
    assert doc["scope"]["script"] == "training/steps.py"
    assert doc["scope"]["step"]["function"] == "step"
    assert doc["scope"]["step"]["line"] == def_line((workspace / "training/steps.py").read_text()) == 8
    old = json.loads((Path(doc["baseline"]["run_dir"]) / "measure.json").read_text())
    assert old["scope"]["step"]["function"] == "step"
    assert old["scope"]["step"]["line"] == def_line(STEP_MODULE) == 6
    assert old["revision"]["commit"] == doc["against"]["commit"]
    with History.open(workspace) as h:
        assert h.get(Path(doc["run_dir"]).name)["verdict"] == "slower"
