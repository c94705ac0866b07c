"""Where a file's lines are in another version of it: the one line map, for the editor (a run's
figures following their lines through edits) and for `measure --against REV` (the step loop of
the working tree in an older revision).

    moved = LineMap.between(measured_text, current_text)
    moved.now(41)      # the 0-based line that measured line 41 is on now, or None where its code changed
    moved.then(44)     # the measured line that line 44 of the document was, or None for new or changed code
    moved.changed      # how many measured lines are no longer in the document as they were
    map_line(old_text, new_text, 7)          # the same, 1-based, from the newer text to the older
    map_step_loop(old_text, new_text, 12)    # the step loop's header in the older text

Invariants:
- Pure: two texts in, a map out. A line maps only where the two versions agree around it (after
  the common head and tail, difflib's matching blocks without its junk heuristic, so a one-line
  edit in a long file costs one short comparison): a changed, inserted or deleted line has no
  counterpart, never a guessed one. Lines are compared without their line ending and trailing
  blanks (an editor may change both on save).
- The step loop is found in the old version by its header when that line is unchanged, else by the
  first statement of its body that is (the innermost loop around that statement in the old
  version is the step loop, since that statement sits directly in its body). Otherwise: None.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from difflib import SequenceMatcher

from . import loops


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]


@dataclass(frozen=True)
class LineMap:
    _now: dict[int, int] = field(default_factory=dict)  # measured line -> current line (0-based)
    _then: dict[int, int] = field(default_factory=dict)  # current line -> measured line
    measured_lines: int = 0
    identical: bool = True

    @classmethod
    def between(cls, measured: str, current: str) -> "LineMap":
        old, new = _lines(measured), _lines(current)
        if old == new:
            same = {i: i for i in range(len(old))}
            return cls(same, same, len(old), True)
        head = 0
        while head < min(len(old), len(new)) and old[head] == new[head]:
            head += 1
        tail = 0
        while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
            tail += 1
        now = {i: i for i in range(head)}
        for k in range(tail):
            now[len(old) - 1 - k] = len(new) - 1 - k
        middle = SequenceMatcher(None, old[head:len(old) - tail], new[head:len(new) - tail], autojunk=False)
        for block in middle.get_matching_blocks():
            for k in range(block.size):
                now[head + block.a + k] = head + block.b + k
        return cls(now, {b: a for a, b in now.items()}, len(old), False)

    def now(self, measured_line: int) -> int | None:
        return self._now.get(measured_line)

    def then(self, current_line: int) -> int | None:
        return self._then.get(current_line)

    @property
    def changed(self) -> int:
        return self.measured_lines - len(self._now)


def map_line(old_text: str, new_text: str, new_line: int) -> int | None:
    """The 1-based line of `old_text` that line `new_line` of `new_text` was, when unchanged."""
    old_line = LineMap.between(old_text, new_text).then(new_line - 1)
    return None if old_line is None else old_line + 1


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
