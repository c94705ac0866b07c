"""Edits applied to a text: the one place that turns `Edit` positions into a new text.

    new_text = apply_edits(text, edits)   # EditError (a ValueError) with a one-line reason

Invariants: positions are those of `model.Edit` (1-based lines split where Python's tokenizer
splits them, 0-based columns in code points, end exclusive); overlapping edits or a position
outside the text are refused, never half applied; an inserted line break follows the text's own
(CRLF stays CRLF). The editor, `stepscope check --fix` and `stepscope try` apply fixes with it.
"""

from __future__ import annotations

import re
from typing import Sequence

from .context import splits_like_tokenizer
from .model import Edit

_LINE_END = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")


class EditError(ValueError):
    """Edits that cannot be applied to this text: the reason in one line."""


def newline_of(text: str) -> str:
    """The text's line break: CRLF when its first line ends so, else LF."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split where Python's tokenizer splits them."""
    if splits_like_tokenizer(text):
        return text.splitlines(keepends=True)
    lines = _LINE_END.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """`text` with `edits` applied together."""
    lines = split_lines(text)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, col: int) -> int:
        if line == len(lines) + 1 and col == 0:
            return len(text)
        if not 1 <= line <= len(lines):
            raise EditError(f"an edit points at line {line}, and the file has {len(lines)}")
        body = lines[line - 1].rstrip("\r\n")
        if not 0 <= col <= len(body):
            raise EditError(f"an edit points at column {col} of line {line}, which has {len(body)}")
        return starts[line - 1] + col

    nl = newline_of(text)
    spans = sorted(((offset(e.line, e.col), offset(e.end_line, e.end_col), e.new_text) for e in edits),
                   key=lambda s: (s[0], s[1]))
    for (a0, a1, _), (b0, _, _) in zip(spans, spans[1:]):
        if b0 < a1:
            raise EditError("the edits overlap")
    out = text
    for start, end, new in reversed(spans):
        if start > end:
            raise EditError("an edit ends before it starts")
        if nl != "\n":
            new = new.replace("\r\n", "\n").replace("\n", nl)
        out = out[:start] + new + out[end:]
    return out
