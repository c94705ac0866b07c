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


def test_a_failure_inside_a_library_names_the_user_s_line_and_the_library_s_message(workspace: Path):
    """torch raising `AssertionError("Torch not compiled with CUDA enabled")` from its own
    __init__.py: the reason names the user's line that called it and the message, never the line
    inside the library, even when the library is installed inside the workspace (a .venv there)."""
    lib = workspace / ".venv" / "lib" / "python3" / "site-packages" / "fakecuda"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text(textwrap.dedent("""\
        def _lazy_init():
            raise AssertionError("Torch not compiled with CUDA enabled")

        def to_device(t):
            _lazy_init()
        """))
    _write(workspace, "gpu.py", """\
        import sys
        sys.path.insert(0, ".venv/lib/python3/site-packages")
        import torch
        import fakecuda
        model = torch.nn.Linear(4, 4)
        for i in range(20):
            loss = model(torch.randn(2, 4)).sum()
            loss.backward()
            if i == 2:
                fakecuda.to_device(loss)
        """)
    r = run_stepscope("profile", "gpu.py", cwd=workspace)
    assert r.returncode == 3, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("stepscope: the program raised AssertionError at gpu.py:10 before the window completed: "
                           "Torch not compiled with CUDA enabled (run folder: "), last


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
    """wait 1 + warmup 2: the data runs out at the first active step's batch read, whose next() alone
    was once reported as a one-step window."""
    _write(workspace, "short.py", """\
        import torch
        model = torch.nn.Linear(4, 4)
        for i in range(3):
            model(torch.randn(2, 4)).sum().backward()
        """)
    r = run_stepscope("profile", "short.py", "--json", cwd=workspace)
    assert (r.returncode, r.stdout) == (3, ""), r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("stepscope: the loop ran 3 steps, fewer than the 4 needed")
    assert "--warmup" in r.stderr


def test_the_loops_last_next_is_never_a_step(workspace: Path):
    """wait 1 + warmup 2, 4 iterations: one active step ran; the next() that found the data exhausted
    left a second marker in the trace, once reported as a second, near-empty step."""
    _write(workspace, "short.py", """\
        import torch
        model = torch.nn.Linear(4, 4)
        for i in range(4):
            model(torch.randn(2, 4)).sum().backward()
        """)
    r = run_stepscope("profile", "short.py", "--json", cwd=workspace)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert [s["name"] for s in report["steps"]] == ["ProfilerStep#3"]
    assert "the loop ended after 1 of the 5 active steps asked: the figures are over the 1 that ran" in \
        " ".join(report["notes"])


def test_a_program_that_exits_inside_the_window_is_reported_with_a_note(workspace: Path):
    _write(workspace, "quits.py", """\
        import sys
        import torch
        model = torch.nn.Linear(4, 4)
        for i in range(20):
            model(torch.randn(2, 4)).sum().backward()
            if i == 2:
                sys.exit(0)
        """)
    r = run_stepscope("profile", "quits.py", "--wait", "0", "--warmup", "1", "--active", "3", "--json", cwd=workspace)
    assert r.returncode == 0, r.stderr  # the program's own decision, not a failure
    report = json.loads(r.stdout)
    assert len(report["steps"]) == 2
    assert any(n.startswith("the program exited (status 0) after 2 of the 3 active steps asked") for n in report["notes"])


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
