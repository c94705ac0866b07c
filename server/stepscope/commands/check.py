"""`stepscope check PATH...`: static rules. Must not import torch or the LSP stack.

`--fix` applies the quick fixes an editor offers first (`rules/autofix.py`), writing each file
whole or not at all, and reports what it fixed and what remains; `--diff` prints those fixes as a
unified diff and writes nothing. Notebooks are checked, not fixed.

Exit codes: 0 nothing found (with `--fix`: nothing remains; with `--diff`: nothing to change),
1 findings (with `--fix`: findings remain; with `--diff`: there are changes), 2 usage error (bad
flag, unknown rule code, missing path) or a file that could not be checked: unreadable,
undecodable, or not parsing as Python (for a notebook: a cell that does not parse; its other cells
are checked). Such a file (or cell) is named on stderr with its reason (and in JSON's `errors`,
SARIF's `toolExecutionNotifications`); the other files are still checked and their findings shown,
and the exit code is 2 whatever they found: the check is incomplete.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import FOUND, OK, USAGE, UsageError

COULD_NOT_CHECK = USAGE  # a file could not be checked: the result is incomplete


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    p.add_argument("--select", help="codes or prefixes to run (SS = every rule)")
    p.add_argument("--ignore", help="codes or prefixes to skip")
    p.add_argument("--fix", action="store_true",
                   help="apply the quick fixes that change code (the editor's first fix of each finding)")
    p.add_argument("--diff", action="store_true",
                   help="print the fixes --fix would make as a unified diff; write nothing")


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
    if args.fix or args.diff:
        return _fix(args, select, ignore)
    try:
        result = check_files(args.paths, cli_select=select, cli_ignore=ignore)
    except PathNotFound as e:
        raise UsageError(str(e)) from None
    for warning in result.warnings:
        sys.stderr.write(f"stepscope: warning: {warning}\n")
    for error in result.errors:
        sys.stderr.write(f"stepscope: {_where(error)}: {error.reason}\n")
    diagnostics = result.diagnostics
    if args.format != "text":  # the fixes listed are the editor's, those that change code first
        from ..rules.autofix import with_editor_fixes

        diagnostics = with_editor_fixes(diagnostics)
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


def _where(error: Any) -> str:
    """Where a `rules.files.FileError` is: `path`, `path:line`, or for a notebook's cell `path:cell 2:3`."""
    return (_shown(error.path) + (f":cell {error.cell}" if error.cell else "")
            + (f":{error.line}" if error.line else ""))


def _fix(args: argparse.Namespace, select: tuple[str, ...] | None, ignore: tuple[str, ...]) -> int:
    import difflib

    from ..rules import PathNotFound
    from ..rules.autofix import fix_files
    from ..rules.output import render_json, render_sarif, render_text

    if args.diff and args.format != "text":
        raise UsageError("--diff prints a unified diff: it takes no --format")
    try:
        result = fix_files(args.paths, cli_select=select, cli_ignore=ignore, write=not args.diff)
    except PathNotFound as e:
        raise UsageError(str(e)) from None
    for warning in result.warnings:
        sys.stderr.write(f"stepscope: warning: {warning}\n")
    for error in result.errors:
        sys.stderr.write(f"stepscope: {_where(error)}: {error.reason}{'' if error.in_part else ', not fixed'}\n")
    for fixed in result.files:
        if fixed.note:
            sys.stderr.write(f"stepscope: {_shown(str(fixed.path.resolve()))}: {fixed.note}\n")
    count = len(result.applied)
    remaining = result.remaining
    if args.diff:
        for fixed in result.changed:
            shown = _shown(str(fixed.path.resolve()))
            sys.stdout.writelines(difflib.unified_diff(
                _keep_ends(fixed.before), _keep_ends(fixed.after), shown, shown))
        sys.stdout.flush()
        sys.stderr.write(f"would fix {_problems(count)} in {len(result.changed)} file(s); "
                         f"{_problems(len(remaining))} would remain\n")
        if result.errors:
            return COULD_NOT_CHECK
        return FOUND if result.changed else OK
    if args.format == "json":
        sys.stdout.write(render_json(remaining, result.errors, result.files_checked, fixed=[
            {**a.diagnostic.to_dict(), "title": a.title} for _, a in result.applied]))
    elif args.format == "sarif":
        sys.stdout.write(render_sarif(remaining, result.errors))
    else:
        for fixed, applied in result.applied:
            d = applied.diagnostic
            sys.stdout.write(f"{_shown(d.path)}:{d.line}:{d.col + 1}: {d.code} fixed: {applied.title}\n")
        sys.stdout.write(render_text(remaining, Path.cwd()))
        sys.stdout.flush()
        verb = "remains" if len(remaining) == 1 else "remain"
        sys.stderr.write(f"fixed {_problems(count)} in {len(result.changed)} file(s); "
                         f"{_problems(len(remaining))} {verb} in {result.files_checked} file(s) checked\n")
    sys.stdout.flush()
    if result.errors:
        return COULD_NOT_CHECK
    return FOUND if remaining else OK


def _problems(n: int) -> str:
    return f"{n} problem" if n == 1 else f"{n} problems"


def _keep_ends(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


def _shown(path: str) -> str:
    try:
        return Path(path).relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path
