"""Helpers for rule tests: run the real checker on a source written in the test."""

from __future__ import annotations

import textwrap

from stepscope.rules import Config, Diagnostic
from stepscope.rules.engine import check_source

EVERY_RULE = Config(select=("SS",))


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def check(text: str, config: Config = EVERY_RULE, path: str = "/project/train.py") -> list[Diagnostic]:
    """Every rule, rule errors raised (a crashing rule must fail the test, not hide)."""
    return check_source(src(text), path, config, strict=True)


def found(text: str, code: str) -> list[tuple[int, str]]:
    """(line, covered source) for each diagnostic of `code`."""
    lines = src(text).splitlines()
    out = []
    for d in check(text):
        if d.code != code:
            continue
        if d.line == d.end_line:
            out.append((d.line, lines[d.line - 1][d.col:d.end_col]))
        else:
            out.append((d.line, lines[d.line - 1][d.col:]))
    return out


def apply_fix(text: str, fix) -> str:
    """Apply a Fix's edits (bottom-up so coordinates stay valid)."""
    lines = text.splitlines(keepends=True)
    flat = "".join(lines)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def at(line: int, col: int) -> int:
        return offsets[line - 1] + col

    for edit in sorted(fix.edits, key=lambda e: (e.line, e.col), reverse=True):
        start, end = at(edit.line, edit.col), at(edit.end_line, edit.end_col)
        flat = flat[:start] + edit.new_text + flat[end:]
    return flat
