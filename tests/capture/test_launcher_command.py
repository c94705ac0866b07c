"""Where the agent goes in a launcher's command: after torchrun's words, or after an interpreter the
command ends with; any other launcher gets the interpreter too. The program is never named there."""

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
