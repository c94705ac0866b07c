"""What `profile` and `measure` share on the command line: the program and its step, from flags.

`add_arguments(parser)` adds SCRIPT, `--line | --function`, `--entry | -m` and `--python`,
`add_launcher_argument(parser)` `--launcher` (`launcher_words(args)` reads it back);
`resolve(args)` checks them (one-line errors: exit 2 for a missing file, 6 for no step) and says
which program runs which step, from which workspace; without `--line`/`--function`, a step that is a
function (no loop of the file is one) is said in a note on stderr.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from .. import errors


def add_arguments(p: argparse.ArgumentParser, *, script_help: str | None = None, metavar: str | None = None) -> None:
    p.add_argument("script", metavar=metavar, help=script_help or (
        "the file that holds the step; without --line or --function, the loop that is clearly the step, or its one "
        "step function (a LightningModule's training_step)"))
    which = p.add_mutually_exclusive_group()
    which.add_argument("--line", type=int, help="line of the step loop (or any line inside it)")
    which.add_argument("--function", help="each call of this function or method is a step (e.g. a request handler, "
                                          "LitModel.training_step): NAME or Class.method, looked for in SCRIPT then in "
                                          "the workspace's modules; module:qualname or path.py:qualname to say where, "
                                          "also in an installed package (transformers.trainer:Trainer.training_step); "
                                          "when the program steps an optimizer, a step is one optimizer step (its "
                                          "micro-batches, under gradient accumulation)")
    p.add_argument("--micro-batch", action="store_true",
                   help="with --function: each call is a step, also where several calls make one optimizer step "
                        "(gradient accumulation)")
    start = p.add_mutually_exclusive_group()
    start.add_argument("--entry", help="the program starts from this file instead of SCRIPT")
    start.add_argument("-m", dest="module", help="the program starts as `python -m MODULE`")
    p.add_argument("--python", help="interpreter that runs the program (default: this one)")


def add_launcher_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--launcher", metavar="CMD",
                   help="start the program's processes with this launcher command, as you would start your script "
                        "with it, e.g. \"torchrun --nproc-per-node 8\", \"accelerate launch --multi_gpu "
                        "--num_processes 8\", \"deepspeed --num_gpus 8\" or \"srun -N 2 --ntasks-per-node 4\": "
                        "Stepscope puts its agent where the launcher expects the script (and the interpreter before "
                        "it for a launcher that runs a command)")


def launcher_words(args: argparse.Namespace) -> tuple[str, ...]:
    """The words of `--launcher` (none when it is not given); a UsageError for an empty or
    unbalanced command."""
    from ..capture.launchers import command

    return command.split(args.launcher) if args.launcher is not None else ()


@dataclass(frozen=True)
class Program:
    """The step (the loop at `loop_line` of `script`, or each call of `function`, defined at
    `loop_line` of `script`), the workspace it belongs to, and how the program starts (a step
    function of another module than the one named on the command line: the program starts from
    the one named). Paths are absolute."""

    script: Path
    loop_line: int | None
    function: str | None  # the function's qualified name (`step`, `Trainer.step`)
    root: Path
    entry: Path | None
    module: str | None
    python: str
    args: tuple[str, ...]
    cwd: Path
    micro_batch: bool = False  # each call of `function` is a step, whatever the optimizer does


def workspace_root(script: Path, entry: Path | None, cwd: Path) -> Path:
    """The workspace of a run, where its run folder and history go: the one the program starts in
    (the `--entry` file, else SCRIPT; the current folder where that lies in an installed package),
    found from the current folder when that holds the start. A step in an installed package never
    makes its folder the workspace."""
    from ..workspace import find_root

    start = entry or script
    if _installed(start):
        return find_root(cwd)
    return find_root(cwd) if cwd in start.parents else find_root(start)


def _installed(path: Path) -> bool:
    return any(part in ("site-packages", "dist-packages") for part in path.parts)


def resolve(args: argparse.Namespace) -> Program:
    from ..capture.request import check_entry_module
    from ..capture.step import default_step, resolve_function, resolve_step

    check_entry_module(args.module)
    script = Path(args.script).resolve()
    if not script.is_file():
        raise errors.UsageError(f"no such file: {args.script}")
    cwd = Path.cwd()
    entry = Path(args.entry).resolve() if args.entry else None
    if entry is not None and not entry.is_file():
        raise errors.UsageError(f"no such file: {args.entry}")
    root = workspace_root(script, entry, cwd)
    python = args.python or sys.executable
    step_file, function, found = script, None, None
    if args.function:
        found = resolve_function(script, args.function, root, cwd, python)
    elif args.line is not None:
        loop_line = resolve_step(script, args.line)
    else:
        chosen = default_step(script, root, cwd)
        found, loop_line = chosen.function, chosen.loop_line
        if found is not None:
            sys.stderr.write(f"stepscope: note: no loop of {script.name} is a step: the step is each call of "
                             f"{found.qualname} ({chosen.reason}); --line or --function chooses another\n")
    if found is not None:
        # the step's file is where the function is; the program still starts from SCRIPT
        step_file, function, loop_line = found.file, found.qualname, found.line
        if step_file != script and entry is None and not args.module:
            entry = script
    if getattr(args, "micro_batch", False) and function is None:
        raise errors.UsageError("--micro-batch applies to a step function (--function): a loop's step is its "
                                "iteration")
    return Program(script=step_file, loop_line=loop_line, function=function, root=root, entry=entry,
                   module=args.module, python=python, args=tuple(getattr(args, "script_args", [])), cwd=cwd,
                   micro_batch=bool(getattr(args, "micro_batch", False)))
