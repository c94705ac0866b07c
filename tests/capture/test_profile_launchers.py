"""Profiling where the job runs, with the real launchers on the CPU (gloo): two torchrun processes
joined as two nodes through c10d rendezvous on 127.0.0.1, started by hand from a prepared run
folder; tasks with the environment srun gives them, on two "nodes"; `accelerate launch` and
`deepspeed` given as they are typed, each running the agent as its script; a group torchrun
restarts after a rank dies; a launcher command that cannot start, and one that ends before any
rank started."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import run_stepscope
from .ddp_program import write_ddp_program

pytestmark = pytest.mark.torch

HERE = Path(__file__).resolve().parent
TORCHRUN = str(Path(sys.executable).with_name("torchrun"))
ACCELERATE = str(Path(sys.executable).with_name("accelerate"))
DEEPSPEED = str(Path(sys.executable).with_name("deepspeed"))
FAST = ("--wait", "0", "--warmup", "1", "--active", "3")

# An Accelerate training loop as its users write it, on the CPU (Accelerator(cpu=True) joins the
# ranks torchrun starts in a gloo group)
ACCELERATE_PROGRAM = """\
import sys

import torch
from accelerate import Accelerator
from torch import nn

accelerator = Accelerator(cpu=True)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
model, opt = accelerator.prepare(model, opt)
# one write per line: the ranks share one pipe, and print() writes its words apart
sys.stdout.write(f"accelerate {accelerator.distributed_type} {accelerator.process_index} {accelerator.num_processes}\\n")
for i in range(30):
    x = torch.randn(16, 32)
    loss = model(x).square().mean()
    accelerator.backward(loss)
    opt.step()
    opt.zero_grad()
"""

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_torchrun_nodes_joined_through_c10d_record_one_run_folder(workspace: Path):
    write_ddp_program(workspace, "ddp.py")
    launcher = (f"{TORCHRUN} --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d "
                f"--rdzv-endpoint 127.0.0.1:{_free_port()} --rdzv-id stepscope-test")
    r = run_stepscope("profile", "ddp.py", "--prepare", "--launcher", launcher, "--json", *FAST, cwd=workspace)
    assert r.returncode == 0, r.stderr
    prepared = json.loads(r.stdout)
    run = Path(prepared["run_dir"])
    # the command is the user's launcher with the run's own agent as its program; it names nothing else
    assert prepared["command"] == [*launcher.split(), str(run / "agent")]
    assert Path(prepared["cwd"]) == workspace.resolve()  # where the program runs on every node
    assert sorted(p.name for p in run.iterdir()) == ["agent", "files.json", "spec.json"]

    # each "node" starts the same command, as a job script does on every node
    nodes = [subprocess.Popen(prepared["command"], cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) for _ in range(2)]
    try:
        outputs = [node.communicate(timeout=300)[0] for node in nodes]
    finally:
        for node in nodes:
            if node.poll() is None:
                node.kill()
    assert [node.returncode for node in nodes] == [0, 0], outputs

    records = {rank: json.loads((run / f"scenario-rank{rank}.json").read_text())["distributed"] for rank in (0, 1)}
    assert {(d["rank"], d["node"], d["local_rank"], d["world_size"], d["started_by"]) for d in records.values()} == {
        (0, records[0]["node"], 0, 2, "torchrun"), (1, 1 - records[0]["node"], 0, 2, "torchrun")}

    r = run_stepscope("analyze", str(run), "--json", cwd=workspace)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert [(e["rank"], e["node"]) for e in report["ranks"]] == [(0, str(records[0]["node"])),
                                                                 (1, str(records[1]["node"]))]
    assert sorted(n["node"] for n in report["nodes"]) == ["0", "1"]
    assert all(len(n["ranks"]) == 1 and n["ms_per_step"] > 0 for n in report["nodes"])
    # both "nodes" are this machine: one clock, nothing to align, and the collectives agree with that
    assert report["clocks"]["method"] == "one host" and report["clocks"]["by"] == "host"
    assert report["clocks"]["check"]["holds"] and report["clocks"]["check"]["collectives"] >= 3
    assert all(n["clock_offset_us"] == 0 for n in report["nodes"])
    assert all(e["late_ms"] is not None for e in report["ranks"])


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_accelerate_launch_runs_the_agent_as_its_script_on_every_rank(workspace: Path):
    program = workspace / "acc.py"
    program.write_text(ACCELERATE_PROGRAM)
    launcher = f"{ACCELERATE} launch --multi_gpu --num_processes 2 --main_process_port {_free_port()}"
    r = run_stepscope("profile", "acc.py", "--launcher", launcher, "--json", *FAST, cwd=workspace, timeout=300)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    # accelerate ran the agent with its own interpreter, on two ranks of one gloo group
    assert "accelerate DistributedType.MULTI_CPU 1 2" in r.stderr
    assert [(e["rank"], e["steps"]) for e in report["ranks"]] == [(0, 3), (1, 3)]
    distributed = report["scenario"]["distributed"]
    assert distributed["launcher"] == launcher and distributed["world_size"] == 2
    assert distributed["started_by"] == "torchrun"  # accelerate launch --multi_gpu runs torchrun itself
    assert distributed["process_group"] == {"backend": "gloo", "rank": 0, "world_size": 2}
    backward = _line_of(program, "accelerator.backward(loss)")
    assert ("acc.py", backward) in {(Path(e["file"]).name, e["line"]) for e in report["lines"]}


def test_accelerate_launch_on_the_cpu_runs_one_process_and_says_so(workspace: Path):
    (workspace / "acc.py").write_text(ACCELERATE_PROGRAM)
    r = run_stepscope("measure", "acc.py", "--launcher", f"{ACCELERATE} launch --num_processes 2 --cpu", "--warmup",
                      "1", "--passes", "3", "--json", cwd=workspace, timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    # what accelerate itself does: one process, no rank (the command failed before: `python python <agent>`)
    assert "accelerate DistributedType.NO 0 1" in r.stderr
    assert doc["ranks"] is None and doc["scope"]["world_size"] == 1 and len(doc["raw_ms"]) == 3
    assert doc["notes"][0].startswith("the launcher started one process, with no rank in its environment: the program "
                                      "ran once, not as ranks of a job (accelerate launch --cpu starts a single "
                                      "process; on the CPU, `accelerate launch --multi_gpu --num_processes N`")


def test_deepspeed_runs_the_agent_as_its_script_and_the_program_gets_its_local_rank(
        workspace: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # as in a plain shell: deepspeed does not set it
    write_ddp_program(workspace, "ds.py", prologue='print("argv", sys.argv[1:], flush=True)')
    launcher = f"{DEEPSPEED} --num_gpus 2 --master_port {_free_port()}"
    r = run_stepscope("profile", "ds.py", "--launcher", launcher, "--json", *FAST, "--", "--epochs", "1",
                      cwd=workspace, timeout=300)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    # deepspeed's --local_rank reached the program before its own arguments, where deepspeed puts it
    for rank in (0, 1):
        assert f"argv ['--local_rank={rank}', '--epochs', '1']" in r.stderr
    assert [(e["rank"], e["node"], e["steps"]) for e in report["ranks"]] == [(0, "0", 3), (1, "0", 3)]
    distributed = report["scenario"]["distributed"]
    assert (distributed["started_by"], distributed["launcher"], distributed["world_size"]) == ("deepspeed", launcher, 2)
    assert report["scenario"]["program"]["args"] == ["--epochs", "1"]
    # two ranks on this CPU machine, each taking a thread per core: said, with what to do
    assert distributed["omp_num_threads"] is None
    assert "stepscope: note: OMP_NUM_THREADS was not set for the 2 ranks on " in r.stderr
    assert "set it before Stepscope (OMP_NUM_THREADS=1 stepscope …)" in r.stderr


def test_a_launcher_that_ends_before_any_rank_started_is_said_in_its_own_words(workspace: Path):
    r = run_stepscope("profile", "train_ddp.py", "--launcher", f"{TORCHRUN} --nproc-per-node 2 --no-such-flag",
                      cwd=workspace)
    assert r.returncode == 3
    said = r.stderr.strip().splitlines()[-1]
    assert said.startswith("stepscope: the launcher exited with status 2 before any rank started: torchrun: error: "
                           "unrecognized arguments: --no-such-flag (its output is above and in program.log) (run "
                           "folder: "), said


SLURM_INIT = ('dist.init_process_group("gloo", init_method=os.environ["INIT_METHOD"], '
              'rank=int(os.environ["SLURM_PROCID"]), world_size=int(os.environ["SLURM_NTASKS"]))')


def test_tasks_with_sruns_environment_are_ranks_on_their_nodes(workspace: Path, monkeypatch: pytest.MonkeyPatch):
    write_ddp_program(workspace, "slurm_ddp.py", init=SLURM_INIT)
    monkeypatch.setenv("INIT_METHOD", f"tcp://127.0.0.1:{_free_port()}")
    launcher = f"{sys.executable} {HERE / 'slurm_tasks.py'} -N 2 -n 2"
    r = run_stepscope("profile", "slurm_ddp.py", "--launcher", launcher, "--json", *FAST, cwd=workspace, timeout=300)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    run = Path(report["traces"][0]).parent
    # the interpreter and the agent were added after the launcher's words: srun runs a command
    assert report["scenario"]["distributed"]["launcher"] == launcher
    spec = json.loads((run / "spec.json").read_text())
    assert spec["distributed"] == {"world_size": None, "launcher": launcher}
    for rank in (0, 1):
        own = json.loads((run / f"scenario-rank{rank}.json").read_text())["distributed"]
        assert (own["rank"], own["local_rank"], own["node"], own["world_size"], own["started_by"]) == (
            rank, 0, rank, 2, "srun")
    assert [(e["rank"], e["node"], e["steps"]) for e in report["ranks"]] == [(0, "0", 3), (1, "1", 3)]
    assert [n["ranks"] for n in report["nodes"]] == [[0], [1]]


def test_a_group_torchrun_restarts_ends_the_run_and_keeps_what_was_recorded(workspace: Path):
    # rank 1 dies without a word (SIGKILL) in the second cycle, while rank 0 is busy outside collectives
    # (it would fail in its next one, and the run end on that); torchrun may restart the group once
    write_ddp_program(workspace, "dies.py",
             fail="if i == 5: os.kill(os.getpid(), signal.SIGKILL) if rank == 1 else time.sleep(120)")
    r = run_stepscope("profile", "dies.py", "--launcher", f"{TORCHRUN} --nproc-per-node 2 --max-restarts 1",
                      "--repeat", "2", "--json", *FAST, cwd=workspace, timeout=300)
    assert r.returncode == 3, r.stderr
    said = r.stderr.strip().splitlines()[-1]
    # torchrun stopped rank 0 (no word from it either) and restarted the group
    assert said.startswith("stepscope: rank 0 ended in step 6 (active) without saying why (killed by a signal, or out "
                           "of memory?); rank 1 ended in step 6 (active) without saying why")
    assert said.endswith("; the launcher then restarted the group (restart 1), which Stepscope does not record: the "
                         "first attempt's records are kept; the report covers the steps recorded before that")
    # the restarted processes ran nothing and said so
    assert "torchrun restarted the group (restart 1) after a process ended" in r.stderr
    report = json.loads(r.stdout)  # the first cycle, recorded on both ranks before rank 1 died
    run = Path(report["traces"][0]).parent
    assert [Path(t).name for t in report["traces"]] == ["trace-rank0.json", "trace-rank1.json"]
    assert [(e["rank"], e["steps"]) for e in report["ranks"]] == [(0, 3), (1, 3)]
    status = json.loads((run / "status.json").read_text())
    assert status["status"] == "failed" and status["exit"] == 3
    assert status["ranks"][1] == {"rank": 1, "exit": None, "reason": "ended in step 6 (active) without saying why "
                                                                     "(killed by a signal, or out of memory?)"}
    # each events file holds the first attempt's events, then the restarted process's one line (the run
    # ends on the first such line: the other rank's restarted process may have been stopped before it wrote)
    events = {rank: [json.loads(line) for line in (run / f"events-rank{rank}.jsonl").read_text().splitlines()]
              for rank in (0, 1)}
    assert all(e[0]["event"] == "started" and e[0]["restart"] == 0 for e in events.values())
    restarted = [e[-1] for e in events.values() if e[-1]["event"] == "started" and e[-1]["restart"] == 1]
    assert restarted and all(e == {**e, "restart": 1, "world_size": 2} for e in restarted)


@pytest.mark.parametrize(("launcher", "message"), [
    ("no-such-launcher -n 2", "stepscope: cannot start the launcher 'no-such-launcher': No such file or directory"),
    ("", "stepscope: --launcher is empty: give the launcher's command, e.g. \"torchrun --nproc-per-node 2\""),
    ("srun 'unbalanced", "stepscope: --launcher \"srun 'unbalanced\" cannot be read as a command: No closing quotation"),
])
def test_a_launcher_that_cannot_start_is_a_usage_error_in_one_line(workspace: Path, launcher: str, message: str):
    r = run_stepscope("profile", "train_ddp.py", "--launcher", launcher, cwd=workspace)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith(message)


def test_a_launcher_and_nproc_are_not_combined(workspace: Path):
    r = run_stepscope("profile", "train_ddp.py", "--launcher", "torchrun", "--nproc", "2", cwd=workspace)
    assert r.returncode == 2
    assert r.stderr.strip() == ("stepscope: a launcher and nproc > 1 cannot be combined: the launcher chooses how "
                                "many processes to start")
    assert not (workspace / ".stepscope").exists()


def test_the_agent_entry_takes_the_spec_only(workspace: Path):
    r = run_stepscope("profile", "train_ddp.py", "--prepare", "--json", cwd=workspace)
    prepared = json.loads(r.stdout)
    assert prepared["command"] == [sys.executable, str(Path(prepared["run_dir"]) / "agent")]
    extra = subprocess.run([*prepared["command"], "--epochs", "3"], capture_output=True, text=True)
    assert extra.returncode == 70
    assert extra.stderr.startswith("stepscope: the agent takes one argument, the run's spec.json")
    assert not list(Path(prepared["run_dir"]).glob("events*"))


def test_a_rank_the_launcher_numbers_badly_is_refused_in_one_line(workspace: Path):
    prepared = json.loads(run_stepscope("profile", "train_ddp.py", "--prepare", "--json", cwd=workspace).stdout)
    r = subprocess.run(prepared["command"], capture_output=True, text=True, env={**os.environ, "RANK": "first"})
    assert r.returncode == 70
    assert r.stderr == "stepscope: RANK='first' set by torchrun is not a whole number\n"
