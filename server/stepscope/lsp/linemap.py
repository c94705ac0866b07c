"""Where the lines a run measured are now: the map from the measured text to a document's text.

    moved = LineMap.between(measured_text, current_text)
    moved.now(41)      # the 0-based line that measured line 41 is on now, or None where its code changed
    moved.then(44)     # the measured line that line 44 of the document was, or None for new or changed code
    moved.changed      # how many measured lines are no longer in the document as they were

Pure: two texts in, a map out. A line keeps its figures only where its code is unchanged: lines are
compared without their line ending and trailing blanks (an editor may change both on save), and a
line is unchanged only inside a block the two texts share (difflib's matching blocks, after the
common head and tail, so a one-line edit in a long file costs one short comparison). Lines of an
edited, inserted or deleted block have no counterpart, so their figures are hidden rather than
shown beside code they did not measure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from difflib import SequenceMatcher


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
