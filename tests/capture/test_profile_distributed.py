"""`stepscope profile --nproc N`: torchrun itself starts one process per rank on this machine, one trace
per rank and one report; a failing, hanging or cancelled rank ends the run with every rank stopped
(real torch and torchrun on the CPU, gloo backend, 2 ranks)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..conftest import REPO, run_stepscope
from .ddp_program import RECORD_PIDS, write_ddp_program

pytestmark = pytest.mark.torch

FAST = ("--wait", "0", "--warmup", "1", "--active", "3")

def _ddp_program(ws: Path, name: str, *, fail: str = "pass", before_init: str = "pass") -> Path:
    """The DDP program whose ranks record their pids in $PIDS_FILE, `before_init` just before the
    process group forms."""
    return write_ddp_program(ws, name, prologue=f"{RECORD_PIDS}\n{before_init}", fail=fail)


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def _only_run(ws: Path) -> Path:
    runs = list((ws / ".stepscope" / "runs").iterdir())
    assert len(runs) == 1, runs
    return runs[0]


def _assert_all_gone(pids_file: Path, expected: int, *, at_least: int | None = None) -> None:
    """Every rank process that recorded its pid is gone; `expected` of them recorded one (or, when a
    rank may be stopped before it gets that far, at least `at_least`)."""
    pids = {int(p) for p in pids_file.read_text().split()}
    assert (at_least <= len(pids) <= expected) if at_least is not None else len(pids) == expected, pids
    for pid in pids:
        status = Path(f"/proc/{pid}/status")
        assert not status.exists() or "zombie" in status.read_text(), f"rank process {pid} is still running"


@pytest.fixture
def pids_file(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = workspace / "pids.txt"
    monkeypatch.setenv("PIDS_FILE", str(path))
    return path


def test_two_ranks_give_one_trace_each_and_one_report(workspace: Path, pids_file: Path):
    program = _ddp_program(workspace, "ddp.py")
    r = run_stepscope("profile", "ddp.py", "--nproc", "2", "--json", *FAST, cwd=workspace)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)  # exactly one JSON document on stdout
    run = _only_run(workspace)

    # one trace per rank, each rank's own records and events; no file written by two processes; the
    # agent every rank ran is the run's own copy
    assert sorted(p.name for p in run.iterdir()) == [
        "agent", "events-rank0.jsonl", "events-rank1.jsonl", "files-rank0.json", "files-rank1.json", "files.json",
        "program.log", "report.json", "scenario-rank0.json", "scenario-rank1.json", "scenario.json", "sources.json",
        "spec.json",
        "status.json", "timeline-rank0.json", "timeline-rank1.json", "timings-rank0.json", "timings-rank1.json",
        "trace-rank0.json", "trace-rank1.json"]
    assert sorted(p.name for p in (run / "agent").iterdir()) == sorted(
        p.name for p in (REPO / "server" / "stepscope" / "agent").glob("*.py"))
    assert report["traces"] == [str(run / "trace-rank0.json"), str(run / "trace-rank1.json")]

    # each rank's own ms/step; the headline is rank 0's. One answer for the rank the others wait for:
    # these ranks do the same work, so whether one stands out in gloo's waits is up to the machine, but
    # the rank table, slowest_rank and the notes agree
    assert [entry["rank"] for entry in report["ranks"]] == [0, 1]
    assert all(entry["ms_per_step"] > 0 and entry["steps"] == 3 for entry in report["ranks"])
    marked = [entry["rank"] for entry in report["ranks"] if entry["slowest"]]
    if report["slowest_rank"] is None:
        assert marked == [] and any("no rank stands out" in note for note in report["notes"])
    else:
        assert marked == [report["slowest_rank"]] and report["rank_wait"]["rank"] == report["slowest_rank"]
    assert report["machine"]["rank"] == 0 and report["ms_per_step"] == report["ranks"][0]["ms_per_step"]

    # the per-line table names the user's forward and backward lines, on every rank
    forward, backward = _line_of(program, "loss = model(x)"), _line_of(program, "loss.backward()")
    lines = {(Path(e["file"]).name, e["line"]) for e in report["lines"]}
    assert {("ddp.py", forward), ("ddp.py", backward)} <= lines
    for entry in report["ranks"]:
        assert ("ddp.py", backward) in {(Path(e["file"]).name, e["line"]) for e in entry["lines"]}

    # the scenario says it was a run of 2 ranks started by torchrun that formed a gloo group
    distributed = report["scenario"]["distributed"]
    assert distributed["world_size"] == 2 and distributed["rank"] == 0 and distributed["started_by"] == "torchrun"
    assert distributed["launcher"].endswith("-m torch.distributed.run --standalone --nproc-per-node 2 --tee 3")
    assert distributed["omp_num_threads"] == "1"  # torchrun's default with several processes on a node
    assert distributed["process_group"] == {"backend": "gloo", "rank": 0, "world_size": 2}
    assert [(e["rank"], e["exit"], e["record"]) for e in distributed["ranks"]] == [
        (0, 0, "scenario-rank0.json"), (1, 0, "scenario-rank1.json")]
    rank1 = json.loads((run / "scenario-rank1.json").read_text())
    assert rank1["machine"]["rank"] == 1 and rank1["distributed"]["local_rank"] == 1
    assert rank1["distributed"]["node"] == 0
    status = json.loads((run / "status.json").read_text())
    assert status["status"] == "complete" and [e["rank"] for e in status["ranks"]] == [0, 1]

    # every rank got torchrun's environment; the output is in program.log and on stderr, prefixed by rank
    for rank in (0, 1):
        env = f"env RANK={rank} LOCAL_RANK={rank} WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR="
        assert f"[rank {rank}] {env}" in (run / "program.log").read_text()
        assert f"[rank {rank}] {env}" in r.stderr
    _assert_all_gone(pids_file, 2)


def test_the_ddp_example_profiles_under_the_users_torchrun_command(workspace: Path, monkeypatch: pytest.MonkeyPatch):
    # torchrun found on PATH, as in the user's activated environment
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    r = run_stepscope("profile", "train_ddp.py", "--launcher", "torchrun --nproc-per-node 2", "--json", *FAST,
                      "--", "--steps", "12", cwd=workspace)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert [entry["rank"] for entry in report["ranks"]] == [0, 1]
    assert report["scenario"]["distributed"]["launcher"] == "torchrun --nproc-per-node 2"
    assert report["scenario"]["program"]["args"] == ["--steps", "12"]
    backward = _line_of(workspace / "train_ddp.py", "loss.backward()")
    assert ("train_ddp.py", backward) in {(Path(e["file"]).name, e["line"]) for e in report["lines"]}
    assert report["scenario"]["observed"]["data_source"]["kind"] == "DataLoader"


def test_a_failing_rank_stops_the_others_and_exits_3_naming_it(workspace: Path, pids_file: Path):
    program = _ddp_program(workspace, "bad.py", fail='if rank == 1 and i == 1: raise RuntimeError("rank one broke")')
    r = run_stepscope("profile", "bad.py", "--nproc", "2", *FAST, cwd=workspace, timeout=120)
    assert r.returncode == 3, r.stderr
    raise_line = _line_of(program, "rank one broke")
    # rank 1's own traceback, pointing at the user's line, prefixed with its rank
    assert f'[rank 1]   File "{program}", line {raise_line}' in r.stderr
    assert "[rank 1] RuntimeError: rank one broke" in r.stderr
    assert "stepscope/agent" not in r.stderr
    assert f"stepscope: rank 1: the program raised RuntimeError at bad.py:{raise_line}" in r.stderr
    _assert_all_gone(pids_file, 2)
    run = _only_run(workspace)
    status = json.loads((run / "status.json").read_text())
    assert status["status"] == "failed" and status["exit"] == 3 and status["ranks"][1]["exit"] == 3
    assert not list(run.glob("*.partial"))


def test_a_rank_that_never_reaches_the_step_exits_6_naming_it(workspace: Path, pids_file: Path):
    program = _ddp_program(workspace, "skip.py", before_init='if os.environ["RANK"] == "1": sys.exit(0)')
    loop = _line_of(program, "for i in range(30):")
    r = run_stepscope("profile", "skip.py", "--nproc", "2", *FAST, cwd=workspace, timeout=120)
    assert r.returncode == 6, r.stderr
    assert f"stepscope: rank 1: the program ended without reaching the loop at line {loop}" in r.stderr
    # rank 0, waiting for rank 1 in init_process_group (or still importing torch), was stopped
    _assert_all_gone(pids_file, 2, at_least=1)


def test_the_time_limit_stops_every_rank_and_says_where_each_was(workspace: Path, pids_file: Path):
    _ddp_program(workspace, "hang.py", fail="if rank == 1 and i == 1: time.sleep(3600)")
    start = time.monotonic()
    r = run_stepscope("profile", "hang.py", "--nproc", "2", "--timeout", "30", *FAST, cwd=workspace, timeout=120)
    assert r.returncode == 4, r.stderr
    assert "time limit of 30 s reached; the launcher and every rank it started were stopped" in r.stderr
    assert "rank 0 in step 3 (active)" in r.stderr  # waiting for rank 1 in the gradients' all-reduce
    assert "rank 1 in step 2 (active)" in r.stderr
    assert time.monotonic() - start < 80
    _assert_all_gone(pids_file, 2)
    status = json.loads((_only_run(workspace) / "status.json").read_text())
    assert status["status"] == "timeout"
    assert [(e["rank"], e["exit"]) for e in status["ranks"]] == [(0, None), (1, None)]
    assert status["ranks"][1]["reason"] == "stopped in step 2 (active): time limit reached"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_stepscope_cancels_every_rank(workspace: Path, pids_file: Path, sig: signal.Signals):
    _ddp_program(workspace, "slow.py", fail="time.sleep(3600)")
    proc = subprocess.Popen([sys.executable, "-m", "stepscope", "profile", "slow.py", "--nproc", "2", "--json", *FAST],
                            cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(pids_file.read_text().split() if pids_file.exists() else []) < 2:
            time.sleep(0.1)
        time.sleep(1.0)  # let the ranks get into their first step
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert "cancelled; the launcher and every rank it started were stopped" in stderr
    assert stdout == ""  # no report for a cancelled run
    _assert_all_gone(pids_file, 2)
    run = _only_run(workspace)
    assert json.loads((run / "status.json").read_text())["status"] == "cancelled"
    assert not (run / "report.json").exists() and not list(run.glob("*.partial"))


@pytest.mark.parametrize("value", ["0", "-2"])
def test_nproc_below_one_is_a_usage_error(workspace: Path, value: str):
    r = run_stepscope("profile", "train_ddp.py", f"--nproc={value}", cwd=workspace)
    assert r.returncode == 2
    assert r.stderr.strip() == f"stepscope: --nproc must be a whole number >= 1 (got {value})"
    assert not (workspace / ".stepscope").exists()
