"""Strings from a trace (or any file a user points at) made safe to print on a terminal.

A trace is data from anywhere: an operator name can hold ESC sequences that retitle the terminal
or move the cursor, a carriage return or newline that forges a line of the report, or a bidi
override that shows text in another order than it is. `printable` shows every such character as a
visible escape instead, so what the terminal displays is what the string holds, one line per line
of the report. It is for text output only: JSON output keeps strings exact (its encoder escapes
control characters itself).
"""

from __future__ import annotations

ELLIPSIS = "…"
NAME_LIMIT = 80  # characters of a trace name quoted in a sentence (a finding); tables cut theirs to their width


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def printable(text: str, limit: int | None = None) -> str:
    """`text` with every character Python does not call printable (C0 and C1 controls, DEL,
    format characters such as bidi overrides and zero-width joiners, line and paragraph
    separators, spaces other than ' ', surrogates, private-use and unassigned code points)
    written as a visible escape (`\\x1b`, `\\u202e`); cut to `limit` characters, the last an
    ellipsis, when longer. Printable text comes back unchanged.

    Invariants: the result is printable (`str.isprintable()`), so it holds no newline and prints
    as one line; `len(result) <= limit` when a limit is given (at least 1)."""
    if not text.isprintable():
        text = "".join(ch if ch.isprintable() else _escape(ch) for ch in text)
    return text if limit is None else shorten(text, limit)


def shorten(text: str, limit: int = NAME_LIMIT) -> str:
    """`text` cut to `limit` characters, the last an ellipsis, when longer (a kernel name can run to
    thousands of characters). Only cut, never escaped: for text kept exact, as in JSON."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + ELLIPSIS
