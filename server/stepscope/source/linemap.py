"""The same step in another version of a file: where a loop of the current file was in an older
revision (`measure --against REV` runs the step of both).

Invariants:
- A line maps only where the two versions agree around it (difflib's matching blocks, without its
  junk heuristic): a changed line has no counterpart, never a guessed one.
- The step loop is found in the old version by its header when that line is unchanged, else by the
  first statement of its body that is (the innermost loop around that statement in the old
  version is the step loop, since that statement sits directly in its body). Otherwise: None.
"""

from __future__ import annotations

import difflib

from . import loops


def map_line(old_text: str, new_text: str, new_line: int) -> int | None:
    """The 1-based line of `old_text` that line `new_line` of `new_text` was, when unchanged."""
    old, new = old_text.splitlines(), new_text.splitlines()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" and j1 < new_line <= j2:
            return i1 + (new_line - j1)
    return None


def map_step_loop(old_text: str, new_text: str, new_header_line: int) -> int | None:
    """The header line, in `old_text`, of the loop whose header is `new_header_line` in `new_text`."""
    loop = loops.loop_at(new_text, new_header_line)
    if loop is None or loop.line != new_header_line:
        return None
    old_header = map_line(old_text, new_text, new_header_line)
    if old_header is not None:
        found = loops.loop_at(old_text, old_header)
        return found.line if found is not None and found.line == old_header else None
    if not loop.body_lines:
        return None
    old_first = map_line(old_text, new_text, loop.body_lines[0])
    if old_first is None:
        return None
    found = loops.loop_at(old_text, old_first)
    if found is not None and found.line == old_first:  # the first statement is itself a loop
        return found.parent_line
    return found.line if found is not None else None


def header_text(text: str, header_line: int) -> str | None:
    """The loop header's first line as written, without indentation (the step's name in a scope)."""
    lines = text.splitlines()
    if not 1 <= header_line <= len(lines):
        return None
    return lines[header_line - 1].strip() or None
