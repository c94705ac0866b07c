"""The `stepscope` command.

Each sub-command lives in `stepscope.commands.<name>` and exposes `add_arguments(parser)` and
`run(args) -> int`. Modules are imported only for the sub-command that runs, so `stepscope check`
never loads the trace engine, the LSP stack or torch.

Errors reach the user as one line on stderr (`stepscope: <reason>`) and an exit code from
`stepscope.errors`; with `--json`, stdout carries exactly one JSON document or nothing.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from . import __version__
from .errors import USAGE, StepscopeError
from .textsafe import printable

COMMANDS = {
    "profile": "capture a step of a script under torch.profiler and attribute it to lines",
    "measure": "time a step without the profiler: passes, their spread, and before/after verdicts",
    "try": "measure a change (a finding's variant, a quick fix, a patch) against the code as it is, before editing it",
    "analyze": "analyse existing profiler traces (.json, .json.gz, or a folder of them)",
    "runs": "the history of profile, measure and try runs: list, show, compare, delete",
    "check": "static checks for measurement and instrumentation mistakes",
    "redact": "write a copy of a trace that is safe to share (--check: only report what it holds)",
    "serve": "run the language server on stdio",
    "mcp": "run the MCP server on stdio: Stepscope's commands as tools for an MCP client",
}

MODULES = {"try": "try_"}  # a command whose name is a Python keyword: its module's name


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        self.print_usage(sys.stderr)
        sys.stderr.write(f"stepscope: {message}\n")
        raise SystemExit(USAGE)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or with `only`, one sub-command's flags (the others are listed by
    name and help, their modules not imported: `stepscope check` starts without loading what
    `profile` needs)."""
    parser = _Parser(prog="stepscope", description="Where does the time of your PyTorch step go?")
    parser.add_argument("--version", action="version", version=f"stepscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, help_text in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if only is not None and name != only:
            continue
        module = importlib.import_module(f"stepscope.commands.{MODULES.get(name, name)}")
        module.add_arguments(p)
        p.set_defaults(_module=module)
    return parser


def _command_of(argv: list[str]) -> str | None:
    """The sub-command `argv` names, when it is the first word (the only place one can be: the
    top level takes no option with a value)."""
    return argv[0] if argv and argv[0] in COMMANDS else None


PASSES_ARGUMENTS = {"profile", "measure", "try"}  # `-- ARGS...` go to the user's program


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command_of(argv))
    program_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, program_args = argv[:cut], argv[cut + 1:]
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return USAGE
    if program_args and args.command not in PASSES_ARGUMENTS:
        parser.error(f"`{args.command}` takes no program arguments after --")
    args.script_args = program_args
    try:
        return int(args._module.run(args) or 0)
    except StepscopeError as e:
        # one line, shown as it is: a reason can quote a path or a trace's text (control characters escaped)
        sys.stderr.write(f"stepscope: {printable(str(e))}\n")
        return e.exit_code
    except PermissionError as e:  # a file or folder this user may not read or write, wherever it is met
        sys.stderr.write(f"stepscope: {printable(str(e.filename or e))}: permission denied\n")
        return USAGE
    except KeyboardInterrupt:
        sys.stderr.write("stepscope: interrupted\n")
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
