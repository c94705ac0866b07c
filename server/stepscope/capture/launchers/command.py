"""The command that starts a launched run: the launcher's words, then the run's agent where the
launcher expects the program. Pure functions of their arguments.

Where the agent goes (`compose`) is decided by the innermost launcher the words name (`srun …
torchrun …` is torchrun's choice):
- a launcher that runs a Python script with its own interpreter (`torchrun`, `python -m
  torch.distributed.run` or `.launch`, `accelerate launch`, `deepspeed`) gets the agent's folder,
  which Python runs as a script (its `__main__.py`): `torchrun --nproc-per-node 8 <run>/agent`;
- the same launcher told to run a command instead (`--no-python` / `--no_python`), a command that
  already ends with an interpreter (`srun -N 2 python3 -u`), gets what it lacks: the interpreter
  and the folder, or the folder;
- any other command (`srun -N 2`, `mpirun -np 4`) gets the interpreter and the agent's folder:
  `srun -N 2 <python> <run>/agent`.
The program, its arguments and the step are in the run's spec.json, beside the agent: the command
names none of them. Each process reads its rank from the launcher's environment (protocol.placement).
A launcher that adds a `--local-rank=N` argument to its program (torch.distributed.launch, deepspeed)
adds it to the agent's, which passes it on to the program (agent/__main__.py).

When a launcher ends before any rank starts, `last_error_line` picks the line of its output that
says why.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ...errors import UsageError

#: torchrun's module names: `python -m torch.distributed.run` is what the `torchrun` command runs
TORCHRUN_MODULES = ("torch.distributed.run", "torch.distributed.launch")
_INTERPRETER = re.compile(r"python[0-9.]*(\.exe)?", re.IGNORECASE)
_INTERPRETER_VALUE_OPTIONS = ("-X", "-W")  # interpreter options that take the next word as their value
#: torchrun's prefix of each line a worker writes (`--tee`), the one Stepscope's own output uses
RANK_PREFIX_TEMPLATE = "[rank ${rank}] "


@dataclass(frozen=True)
class Launcher:
    """A launcher that runs a Python script itself: its name, how its command is recognised (a
    command's base name followed by `subcommand`, or `python -m` one of `modules`), the flags that
    make it run a command instead of a script, and whether it is torchrun underneath (and takes
    torchrun's line prefix)."""

    name: str
    commands: tuple[str, ...]
    modules: tuple[str, ...]
    no_python: tuple[str, ...]
    subcommand: str | None = None
    torchrun: bool = False


LAUNCHERS = (
    Launcher("torchrun", ("torchrun",), TORCHRUN_MODULES, ("--no-python", "--no_python"), torchrun=True),
    # accelerate's own launcher runs the script with its interpreter; with --multi_gpu through torchrun
    Launcher("accelerate launch", ("accelerate",), ("accelerate.commands.launch",), ("--no_python",),
             subcommand="launch", torchrun=True),
    Launcher("accelerate launch", ("accelerate-launch",), (), ("--no_python",), torchrun=True),
    Launcher("deepspeed", ("deepspeed",), ("deepspeed.launcher.runner",), ("--no_python",)),
)


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


def innermost(words: tuple[str, ...] | list[str]) -> tuple[int, Launcher] | None:
    """The last launcher of LAUNCHERS the command names, and the index of its first word; None when
    it names none (srun, mpirun, a job script's own command)."""
    found = None
    for i, word in enumerate(words):
        following = words[i + 1] if i + 1 < len(words) else None
        for launcher in LAUNCHERS:
            by_command = os.path.basename(word) in launcher.commands and (
                launcher.subcommand is None or following == launcher.subcommand)
            by_module = word == "-m" and following in launcher.modules
            if by_command or by_module:
                found = (i, launcher)
                break
    return found


def is_torchrun(words: tuple[str, ...]) -> bool:
    """Whether the command starts torchrun (as `torchrun` or `python -m torch.distributed.run`, or
    underneath `accelerate launch`), possibly from inside another launcher (`srun … torchrun …`)."""
    found = innermost(words)
    return found is not None and found[1].torchrun


def _ends_with_interpreter(words: tuple[str, ...]) -> bool:
    """Whether the command ends with a Python interpreter and, at most, its options (`python3 -u`)."""
    for i in range(len(words) - 1, -1, -1):
        if _INTERPRETER.fullmatch(os.path.basename(words[i])):
            rest = list(words[i + 1:])
            while rest:
                option = rest.pop(0)
                if option in _INTERPRETER_VALUE_OPTIONS:
                    if not rest:
                        return False
                    rest.pop(0)
                elif not option.startswith("-") or option in ("-", "-m", "-c"):
                    return False
            return True
    return False


def takes_a_script(words: tuple[str, ...]) -> bool:
    """Whether the launcher's program is a Python file (a launcher that runs scripts, or a command
    ending with an interpreter) rather than a command to run."""
    found = innermost(words)
    if found is not None:
        start, launcher = found
        if not any(word in launcher.no_python for word in words[start:]):
            return True
    return _ends_with_interpreter(words)


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


def one_process_note(words: tuple[str, ...]) -> str:
    """What to say when the launcher started one process whose environment gives it no rank."""
    text = "the launcher started one process, with no rank in its environment: the program ran once, not as ranks of a job"
    found = innermost(words)
    if found is not None and found[1].name == "accelerate launch" and "--cpu" in words[found[0]:]:
        text += (" (accelerate launch --cpu starts a single process; on the CPU, `accelerate launch --multi_gpu "
                 "--num_processes N` starts N through torchrun, which a program's Accelerator(cpu=True) joins in a "
                 "gloo group)")
    return text


def shown(words: list[str] | tuple[str, ...]) -> str:
    """A command as one line a shell would read back as the same words."""
    return shlex.join(words)


# -- why a launcher ended before any rank started ----------------------------------------------------
#: a line that says something went wrong: a Python exception, an argument parser's or a shell's error
_ERROR = re.compile(r"^\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Interrupt)\b"
                    r"|\berror\b|can't open file|cannot |No such file or directory|command not found|not found"
                    r"|Permission denied|unknown option|unrecognized|invalid", re.IGNORECASE)
#: a launcher's log lines below the error level (deepspeed's `[INFO]`, torchrun's glog `I1207 …`)
_CHATTER = re.compile(r"\[(?:DEBUG|INFO|WARNING)\]|^[DIW]\d{4} \d")
#: what a launcher says after a child failed, which repeats only its exit status: torchrun's failure
#: report, accelerate's and deepspeed's "returned non-zero exit status" / "exits with return code"
_WRAPPER = re.compile(r"CalledProcessError|ChildFailedError|exits with return code|failed \(exitcode: -?\d+\)"
                      r"|^The above exception was|^\s*(?:error_file|traceback|exitcode)\s*:")
_DECORATION = re.compile(r"^[\W_]*$")  # a rule of ==== or ----, a lone bracket
LINE_LIMIT = 300


def last_error_line(lines: Iterable[str]) -> str | None:
    """The line of a launcher's output that says why it failed: the last one that reads as an error
    and is not the launcher's own report that a child exited (which only repeats the status), else
    the last line with words in it; None for no output. Cut to LINE_LIMIT characters."""
    last_error = last_words = None
    for raw in lines:
        line = raw.strip()
        if not line or _DECORATION.match(line):
            continue
        if _WRAPPER.search(line) or _CHATTER.search(line):
            continue
        last_words = line
        if _ERROR.search(line):
            last_error = line
    found = last_error or last_words
    if found is not None and len(found) > LINE_LIMIT:
        found = found[:LINE_LIMIT - 1] + "…"
    return found
