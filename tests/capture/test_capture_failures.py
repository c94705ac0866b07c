"""The user's program misbehaves: each ending gives its exit code, a one-line reason, and leaves
no half-written result (real torch runs on the CPU)."""

from __future__ import annotations

import json
import os
import textwrap
import time
from pathlib import Path

import pytest

from ..conftest import run_stepscope

pytestmark = pytest.mark.torch


def _write(ws: Path, name: str, body: str) -> Path:
    path = ws / name
    path.write_text(textwrap.dedent(body))
    return path


def _only_run(ws: Path) -> Path:
    runs = list((ws / ".stepscope" / "runs").iterdir())
    assert len(runs) == 1, runs
    return runs[0]


def test_crash_inside_the_step_exits_3_with_a_traceback_at_the_users_line(workspace: Path):
    _write(workspace, "crash.py", """\
        import torch
        model = torch.nn.Linear(4, 4)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(20):
            loss = model(torch.randn(2, 4)).sum()
            loss.backward()
            opt.step()
            if i == 2:
                raise RuntimeError("boom at step two")
        """)
    r = run_stepscope("profile", "crash.py", cwd=workspace)
    assert r.returncode == 3, r.stderr
    assert 'crash.py", line 9' in r.stderr  # the user's own line, not the agent's
    assert "RuntimeError: boom at step two" in r.stderr
    assert "stepscope/agent" not in r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("stepscope: the program raised RuntimeError at crash.py:9")
    run = _only_run(workspace)
    status = json.loads((run / "status.json").read_text())
    assert status["status"] == "failed" and status["exit"] == 3
    assert not (run / "report.json").exists()
    assert not list(run.glob("*.partial"))


def test_program_that_never_reaches_the_loop_exits_6(workspace: Path):
    _write(workspace, "early.py", """\
        import sys
        import torch
        if len(sys.argv) < 5:
            sys.exit(0)
        model = torch.nn.Linear(4, 4)
        for i in range(20):
            model(torch.randn(2, 4)).sum().backward()
        """)
    r = run_stepscope("profile", "early.py", "--line", "6", cwd=workspace)
    assert r.returncode == 6, r.stderr
    assert "without reaching the loop at line 6" in r.stderr


def test_loop_too_short_for_the_window_says_what_to_change(workspace: Path):
    _write(workspace, "short.py", """\
        import torch
        model = torch.nn.Linear(4, 4)
        for i in range(2):
            model(torch.randn(2, 4)).sum().backward()
        """)
    r = run_stepscope("profile", "short.py", cwd=workspace)
    assert r.returncode == 3, r.stderr
    assert "the loop ran 2 steps" in r.stderr and "--warmup" in r.stderr


def test_hanging_program_is_stopped_at_the_time_limit_with_its_workers(workspace: Path):
    _write(workspace, "hang.py", """\
        import os, time
        import torch
        from torch.utils.data import DataLoader, Dataset
        class Slow(Dataset):
            def __len__(self): return 10**6
            def __getitem__(self, i):
                with open(os.environ["PIDS_FILE"], "a") as f:
                    f.write(f"{os.getpid()}\\n")
                time.sleep(3600)
        model = torch.nn.Linear(4, 4)
        for x in DataLoader(Slow(), batch_size=2, num_workers=2):
            model(x).sum().backward()
        """)
    pids_file = workspace / "pids.txt"
    os.environ["PIDS_FILE"] = str(pids_file)
    try:
        start = time.monotonic()
        r = run_stepscope("profile", "hang.py", "--timeout", "8", cwd=workspace)
    finally:
        del os.environ["PIDS_FILE"]
    assert r.returncode == 4, r.stderr
    assert "time limit of 8 s reached" in r.stderr
    assert time.monotonic() - start < 60
    pids = {int(p) for p in pids_file.read_text().split()}
    assert pids, "the DataLoader workers never started"
    for pid in pids:  # every worker is gone
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    status = json.loads((_only_run(workspace) / "status.json").read_text())
    assert status["status"] == "timeout"


def test_existing_output_folder_is_refused_and_left_untouched(workspace: Path):
    out = workspace / "results"
    out.mkdir()
    (out / "keep.txt").write_text("earlier work")
    r = run_stepscope("profile", "train_cpu.py", "--out", str(out), cwd=workspace)
    assert r.returncode == 5
    assert "already exists" in r.stderr
    assert (out / "keep.txt").read_text() == "earlier work"
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


def test_bad_flags_and_missing_files_are_one_line_usage_errors(workspace: Path):
    r = run_stepscope("profile", "nope.py", cwd=workspace)
    assert r.returncode == 2 and r.stderr.strip() == "stepscope: no such file: nope.py"
    r = run_stepscope("profile", "train_cpu.py", "--active", "0", cwd=workspace)
    assert r.returncode == 2 and r.stderr.strip() == "stepscope: --active must be a whole number >= 1 (got 0)"
    r = run_stepscope("profile", "train_cpu.py", "--line", "1", cwd=workspace)
    assert r.returncode == 6 and "not inside a for/while loop" in r.stderr
