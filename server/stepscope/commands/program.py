"""What `profile` and `measure` share on the command line: the program and its step, from flags.

`add_arguments(parser)` adds SCRIPT, `--line | --function`, `--entry | -m` and `--python`;
`resolve(args)` checks them (one-line errors: exit 2 for a missing file, 6 for no step) and says
which program runs which step, from which workspace.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from .. import errors


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("script", help="the file that holds the step loop")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--line", type=int, help="line of the step loop (or any line inside it)")
    which.add_argument("--function", help="each call of this function or method is a step (e.g. a request handler): "
                                          "NAME or Class.method, looked for in SCRIPT then in the workspace's modules; "
                                          "module:qualname or path.py:qualname to say where")
    start = p.add_mutually_exclusive_group()
    start.add_argument("--entry", help="the program starts from this file instead of SCRIPT")
    start.add_argument("-m", dest="module", help="the program starts as `python -m MODULE`")
    p.add_argument("--python", help="interpreter that runs the program (default: this one)")


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


def resolve(args: argparse.Namespace) -> Program:
    from ..capture.request import check_entry_module
    from ..capture.step import resolve_function, resolve_step
    from ..workspace import find_root

    check_entry_module(args.module)
    script = Path(args.script).resolve()
    if not script.is_file():
        raise errors.UsageError(f"no such file: {args.script}")
    cwd = Path.cwd()
    root = find_root(cwd) if cwd in script.parents else find_root(script)
    entry = Path(args.entry).resolve() if args.entry else None
    if entry is not None and not entry.is_file():
        raise errors.UsageError(f"no such file: {args.entry}")
    step_file, function = script, None
    if args.function:
        found = resolve_function(script, args.function, root, cwd)
        # the step's file is where the function is; the program still starts from SCRIPT
        step_file, function, loop_line = found.file, found.qualname, found.line
        if step_file != script and entry is None and not args.module:
            entry = script
    else:
        loop_line = resolve_step(script, args.line)
    return Program(script=step_file, loop_line=loop_line, function=function, root=root, entry=entry,
                   module=args.module, python=args.python or sys.executable,
                   args=tuple(getattr(args, "script_args", [])), cwd=cwd)
