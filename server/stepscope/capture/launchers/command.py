"""The command that starts a launched run: the launcher's words, then the run's agent where the
launcher expects the program. Pure functions of their arguments.

Where the agent goes (`compose`):
- a launcher that runs a Python file itself (torchrun, `python -m torch.distributed.run`), or a
  command that already ends with an interpreter (`srun -N 2 python3`), gets the agent's folder:
  `torchrun --nproc-per-node 8 <run>/agent`;
- any other command (`srun -N 2`, `mpirun -np 4`) gets the interpreter and the agent's folder:
  `srun -N 2 <python> <run>/agent`.
The program, its arguments and the step are in the run's spec.json, beside the agent: the command
names none of them. Each process reads its rank from the launcher's environment (protocol.placement).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from ...errors import UsageError

#: torchrun's module names: `python -m torch.distributed.run` is what the `torchrun` command runs
TORCHRUN_MODULES = ("torch.distributed.run", "torch.distributed.launch")
_INTERPRETER = re.compile(r"python[0-9.]*(\.exe)?", re.IGNORECASE)
#: torchrun's prefix of each line a worker writes (`--tee`), the one Stepscope's own output uses
RANK_PREFIX_TEMPLATE = "[rank ${rank}] "


def split(text: str, what: str = "--launcher") -> tuple[str, ...]:
    """The words of a launcher command as a shell would split them; a UsageError for an empty or
    unbalanced one."""
    try:
        words = tuple(shlex.split(text))
    except ValueError as e:
        raise UsageError(f"{what} {text!r} cannot be read as a command: {e}") from None
    if not words:
        raise UsageError(f"{what} is empty: give the launcher's command, e.g. \"torchrun --nproc-per-node 2\"")
    return words


def is_torchrun(words: tuple[str, ...]) -> bool:
    """Whether the command starts torchrun (as `torchrun` or `python -m torch.distributed.run`),
    possibly from inside another launcher (`srun … torchrun …`)."""
    for i, word in enumerate(words):
        if os.path.basename(word) == "torchrun":
            return True
        if word == "-m" and i + 1 < len(words) and words[i + 1] in TORCHRUN_MODULES:
            return True
    return False


def takes_a_script(words: tuple[str, ...]) -> bool:
    """Whether the launcher's program is a Python file (torchrun, or a command ending with an
    interpreter) rather than a command to run."""
    return is_torchrun(words) or bool(_INTERPRETER.fullmatch(os.path.basename(words[-1])))


def compose(launcher: tuple[str, ...], agent: Path, python: str) -> list[str]:
    """The launcher's command with the agent folder `agent` as its program (see the module's rules)."""
    if takes_a_script(launcher):
        return [*launcher, str(agent)]
    return [*launcher, python, str(agent)]


def nproc(python: str, n: int) -> tuple[str, ...]:
    """torchrun on this machine with `n` processes (`--nproc N`): a standalone rendezvous on a free
    local port, each process's lines prefixed with its rank."""
    return (python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(n), "--tee", "3")


def launcher_environment(words: tuple[str, ...]) -> dict[str, str]:
    """What the launcher's own environment needs: torchrun's line prefix, unless set already."""
    return {"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": RANK_PREFIX_TEMPLATE} if is_torchrun(words) else {}


def shown(words: list[str] | tuple[str, ...]) -> str:
    """A command as one line a shell would read back as the same words."""
    return shlex.join(words)
