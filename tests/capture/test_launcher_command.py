"""Where the agent goes in a launcher's command: after the words of a launcher that runs a script
(torchrun, accelerate launch, deepspeed), or after an interpreter the command ends with; any other
launcher, or one told to run a command (`--no_python`), gets the interpreter too. The program is
never named there. And the line that says why a launcher ended before any rank started."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.capture.launchers import command
from stepscope.errors import UsageError

AGENT = Path("/runs/r1/agent")
PY = "/envs/t/bin/python"


@pytest.mark.parametrize(("launcher", "expected"), [
    ("torchrun --nproc-per-node 8", ["torchrun", "--nproc-per-node", "8", str(AGENT)]),
    ("/opt/bin/torchrun --nnodes 2", ["/opt/bin/torchrun", "--nnodes", "2", str(AGENT)]),
    ("python3 -m torch.distributed.run --standalone", ["python3", "-m", "torch.distributed.run", "--standalone",
                                                       str(AGENT)]),
    ("srun -N 2 torchrun --nproc-per-node 4", ["srun", "-N", "2", "torchrun", "--nproc-per-node", "4", str(AGENT)]),
    ("srun -N 2 python3.11", ["srun", "-N", "2", "python3.11", str(AGENT)]),
    ("srun -N 2 --ntasks-per-node 4", ["srun", "-N", "2", "--ntasks-per-node", "4", PY, str(AGENT)]),
    ("mpirun -np 4", ["mpirun", "-np", "4", PY, str(AGENT)]),
    # accelerate launch and deepspeed run a script with their own interpreter (python python agent failed)
    ("accelerate launch --num_processes 2 --cpu", ["accelerate", "launch", "--num_processes", "2", "--cpu",
                                                   str(AGENT)]),
    ("/v/bin/accelerate launch --multi_gpu --num_processes 8", ["/v/bin/accelerate", "launch", "--multi_gpu",
                                                                "--num_processes", "8", str(AGENT)]),
    ("python -m accelerate.commands.launch --num_processes 2", ["python", "-m", "accelerate.commands.launch",
                                                                "--num_processes", "2", str(AGENT)]),
    ("deepspeed --num_gpus 8", ["deepspeed", "--num_gpus", "8", str(AGENT)]),
    ("deepspeed --hostfile hosts --master_port 29600", ["deepspeed", "--hostfile", "hosts", "--master_port", "29600",
                                                        str(AGENT)]),
    ("python -m torch.distributed.launch --nproc-per-node 2", ["python", "-m", "torch.distributed.launch",
                                                               "--nproc-per-node", "2", str(AGENT)]),
    ("srun -N 2 accelerate launch --multi_gpu", ["srun", "-N", "2", "accelerate", "launch", "--multi_gpu",
                                                 str(AGENT)]),
    # told to run a command, a launcher gets the interpreter too
    ("accelerate launch --no_python", ["accelerate", "launch", "--no_python", PY, str(AGENT)]),
    ("torchrun --no-python --nproc-per-node 2", ["torchrun", "--no-python", "--nproc-per-node", "2", PY, str(AGENT)]),
    ("deepspeed --no_python --no_local_rank", ["deepspeed", "--no_python", "--no_local_rank", PY, str(AGENT)]),
    # a command that ends with an interpreter and its options
    ("srun -N 2 python3 -u", ["srun", "-N", "2", "python3", "-u", str(AGENT)]),
    ("mpirun -np 2 python -X faulthandler", ["mpirun", "-np", "2", "python", "-X", "faulthandler", str(AGENT)]),
    # `accelerate` without `launch` is no launcher of scripts
    ("srun accelerate", ["srun", "accelerate", PY, str(AGENT)]),
])
def test_the_agent_goes_where_the_launcher_expects_the_program(launcher: str, expected: list[str]):
    assert command.compose(command.split(launcher), AGENT, PY) == expected


def test_nproc_is_torchrun_on_this_machine():
    words = command.nproc(PY, 3)
    assert words == (PY, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "3", "--tee", "3")
    assert command.is_torchrun(words)
    assert command.launcher_environment(words) == {"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": "[rank ${rank}] "}
    assert command.launcher_environment(command.split("srun -N 2")) == {}


def test_a_command_with_spaces_is_shown_as_a_shell_reads_it_back():
    words = ["torchrun", "--rdzv-endpoint", "head:29500", "/my runs/agent"]
    assert command.split(command.shown(words)) == tuple(words)


@pytest.mark.parametrize("text", ["", "   ", "srun 'unbalanced"])
def test_an_empty_or_unbalanced_command_is_a_usage_error(text: str):
    with pytest.raises(UsageError):
        command.split(text)


def test_torchrun_underneath_gets_torchruns_line_prefix():
    for launcher in ("torchrun --nproc-per-node 2", "accelerate launch --multi_gpu --num_processes 2",
                     "srun python -m torch.distributed.run"):
        assert command.launcher_environment(command.split(launcher)) == {
            "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": "[rank ${rank}] "}, launcher
    assert command.launcher_environment(command.split("deepspeed --num_gpus 2")) == {}


# what the launchers printed, on this machine, when they could not start a rank
TORCHRUN_BAD_FLAG = """\
usage: torchrun [-h] [--nnodes NNODES] [--nproc-per-node NPROC_PER_NODE]
                training_script ...
torchrun: error: unrecognized arguments: --bogus
"""
TORCHRUN_NO_FILE = """\
W1207 02:59:27.486000 17409 torch/distributed/run.py:874] *****************************************
/v/bin/python: can't open file '/nonexist': [Errno 2] No such file or directory
/v/bin/python: can't open file '/nonexist': [Errno 2] No such file or directory
E1207 02:59:27.720000 17409 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 2) local_rank: 0 (pid: 17430) of binary: /v/bin/python
Traceback (most recent call last):
  File "/v/bin/torchrun", line 6, in <module>
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
/nonexist FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  rank      : 0 (local_rank: 0)
  exitcode  : 2 (pid: 17430)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""
ACCELERATE_PYTHON_PYTHON = """\
The following values were not passed to `accelerate launch` and had defaults used instead:
  File "/v/bin/python", line 1
    ELF
SyntaxError: source code cannot contain null bytes
RuntimeError:   File "/v/bin/python", line 1
    ELF
SyntaxError: source code cannot contain null bytes
The above exception was the direct cause of the following exception:
Traceback (most recent call last):
    raise subprocess.CalledProcessError(
subprocess.CalledProcessError: Command '['/v/bin/python', '/v/bin/python', 'agent']' returned non-zero exit status 1.
"""
DEEPSPEED_NO_FILE = """\
[2026-12-07 02:59:18,489] [INFO] [launch.py:245:main] process 17272 spawned with command: ['/v/bin/python', '-u', '/nonexist', '--local_rank=0']
/v/bin/python: can't open file '/nonexist': [Errno 2] No such file or directory
[2026-12-07 02:59:19,498] [INFO] [launch.py:253:sigkill_handler] Killing subprocess 17272
[2026-12-07 02:59:19,502] [ERROR] [launch.py:259:sigkill_handler] ['/v/bin/python', '-u', '/nonexist', '--local_rank=1'] exits with return code = 2
"""


@pytest.mark.parametrize(("output", "said"), [
    (TORCHRUN_BAD_FLAG, "torchrun: error: unrecognized arguments: --bogus"),
    # the worker's own error, not torchrun's report that a worker exited
    (TORCHRUN_NO_FILE, "/v/bin/python: can't open file '/nonexist': [Errno 2] No such file or directory"),
    (ACCELERATE_PYTHON_PYTHON, "SyntaxError: source code cannot contain null bytes"),
    (DEEPSPEED_NO_FILE, "/v/bin/python: can't open file '/nonexist': [Errno 2] No such file or directory"),
    ("srun: job 12 queued and waiting for resources\nsrun: Job has been cancelled\n", "srun: Job has been cancelled"),
    ("", None),
    ("\n=====\n", None),
])
def test_a_launcher_that_ended_before_any_rank_is_said_in_its_own_error_line(output: str, said: str | None):
    assert command.last_error_line(output.splitlines(keepends=True)) == said


def test_a_long_error_line_is_cut():
    said = command.last_error_line(["ValueError: " + "x" * 1000])
    assert said is not None and len(said) == command.LINE_LIMIT and said.endswith("…")


def test_a_single_process_under_accelerate_cpu_is_said_with_the_way_to_several():
    assert "accelerate launch --cpu starts a single process" in command.one_process_note(
        command.split("accelerate launch --num_processes 2 --cpu"))
    assert command.one_process_note(command.split("srun -n 1")) == (
        "the launcher started one process, with no rank in its environment: the program ran once, not as ranks of a "
        "job")
