"""`stepscope check PATH...`: static rules. Must not import torch or the LSP stack.

Exit codes: 0 nothing found, 1 findings, 2 usage error (bad flag, unknown rule code, missing
path) or a file that could not be checked: unreadable, undecodable, or not parsing as Python
(for a notebook: a cell that does not parse; its other cells are checked). Such a file (or cell)
is named on stderr with its reason (and in JSON's `errors`, SARIF's `toolExecutionNotifications`);
the other files are still checked and their findings shown, and the exit code is 2 whatever they
found: the check is incomplete.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import FOUND, OK, USAGE, UsageError

COULD_NOT_CHECK = USAGE  # a file could not be checked: the result is incomplete


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    p.add_argument("--select", help="codes or prefixes to run (SS = every rule)")
    p.add_argument("--ignore", help="codes or prefixes to skip")


def _codes(value: str | None, flag: str) -> tuple[str, ...] | None:
    from ..rules.config import validate_codes

    if value is None:
        return None
    codes = tuple(c.strip().upper() for c in value.split(",") if c.strip())
    if not codes:
        raise UsageError(f"{flag} needs at least one rule code or prefix")
    unknown = validate_codes(codes)
    if unknown:
        raise UsageError(f"{flag}: unknown rule code or prefix: {', '.join(unknown)}")
    return codes


def run(args: argparse.Namespace) -> int:
    from ..rules import PathNotFound, check_files
    from ..rules.output import render_json, render_sarif, render_text

    select = _codes(args.select, "--select")
    ignore = _codes(args.ignore, "--ignore") or ()
    try:
        result = check_files(args.paths, cli_select=select, cli_ignore=ignore)
    except PathNotFound as e:
        raise UsageError(str(e)) from None
    for warning in result.warnings:
        sys.stderr.write(f"stepscope: warning: {warning}\n")
    for error in result.errors:
        where = _shown(error.path) + (f":cell {error.cell}" if error.cell else "") \
            + (f":{error.line}" if error.line else "")
        sys.stderr.write(f"stepscope: {where}: {error.reason}\n")
    diagnostics = result.diagnostics
    if args.format == "json":
        sys.stdout.write(render_json(diagnostics, result.errors, result.files_checked))
    elif args.format == "sarif":
        sys.stdout.write(render_sarif(diagnostics, result.errors))
    else:
        sys.stdout.write(render_text(diagnostics, Path.cwd()))
        sys.stdout.flush()
        if diagnostics or result.errors:
            noun = "problem" if len(diagnostics) == 1 else "problems"
            summary = f"{len(diagnostics)} {noun} in {result.files_checked} file(s) checked"
            unchecked = {e.path for e in result.errors if not e.in_part}
            in_part = {e.path for e in result.errors if e.in_part} - unchecked
            if unchecked:
                summary += f"; {len(unchecked)} file(s) could not be checked"
            if in_part:
                summary += f"; {len(in_part)} notebook(s) checked in part"
            sys.stderr.write(summary + "\n")
    sys.stdout.flush()
    if result.errors:
        return COULD_NOT_CHECK
    return FOUND if diagnostics else OK


def _shown(path: str) -> str:
    try:
        return Path(path).relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path
