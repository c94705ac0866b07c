"""Where a failed run's program raised: the last Python traceback in its log, and the user's frame in it.

Pure functions over the log's text (`last_traceback`) and over paths (`users_frame`); reading the
run folder is the caller's.

Invariants:
- Only the last traceback of the text counts: with chained exceptions ("The above exception was the
  direct cause of...", "During handling of...") that is the one Python prints last, the exception
  the program died of; an earlier traceback in the log (a caught error the program printed) is
  superseded by any later one, even one cut short (then there is no answer rather than an old one).
- A traceback is read from its "Traceback (most recent call last):" header on; its frames are the
  `  File "<path>", line <n>, in <name>` lines, each with the source line printed under it when
  there is one (the `^^^^` markers are skipped); its exception is the first line at column 0 after
  at least one frame that reads as one (`RuntimeError: ...`, `pkg.Error: ...`, a bare
  `KeyboardInterrupt`). A text with no such header, or a header with no frame or no exception line
  after it (a log cut short), gives None.
- Lines that are no part of a traceback (the program's prints, warnings, a profiler's notes written
  between its lines) never make a frame or the exception: a line at column 0 that does not read as
  an exception is passed over.
- `users_frame` never returns a frame whose file lies outside the workspace root once links and
  `..` are resolved, nor one in an installed package (`site-packages`, `dist-packages`) or in a
  hidden folder of the workspace (`.venv`, `.stepscope`): the editor is never pointed anywhere else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

HEADER = "Traceback (most recent call last):"
_FRAME = re.compile(r'^\s+File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<function>.+))?$')
_MARKERS = re.compile(r"^\s*[\^~]+\s*$")  # the column markers under a source line (Python 3.11+)
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(?::(?: .*)?)?$")  # `Name`, `Name:`, `Name: message`
_INSTALLED = frozenset({"site-packages", "dist-packages"})


@dataclass(frozen=True)
class Frame:
    file: str  # as the traceback prints it (absolute for a file run from disk)
    line: int  # 1-based
    function: str
    code: str  # the source line printed under the frame, stripped ("" when none was printed)


@dataclass(frozen=True)
class Raised:
    frames: tuple[Frame, ...]  # outermost first, as printed
    exception: str  # the exception's line: `RuntimeError: mat1 and mat2 shapes cannot be multiplied ...`


def last_traceback(text: str) -> Raised | None:
    """The last complete traceback of `text` (a program's output), or None when it has none."""
    lines = text.splitlines()
    for start in range(len(lines) - 1, -1, -1):
        if lines[start].strip() == HEADER:
            return _read(lines, start + 1)
    return None


def _read(lines: list[str], at: int) -> Raised | None:
    frames: list[Frame] = []
    for i in range(at, len(lines)):
        line = lines[i]
        frame = _FRAME.match(line)
        if frame is not None:
            frames.append(Frame(frame["file"], int(frame["line"]), (frame["function"] or "").strip(), ""))
            continue
        if not line.strip() or _MARKERS.match(line):
            continue
        if line[0].isspace():  # the source line under the last frame
            if frames and not frames[-1].code:
                last = frames[-1]
                frames[-1] = Frame(last.file, last.line, last.function, line.strip())
            continue
        if not frames:
            return None
        if _EXCEPTION.match(line.rstrip()):
            return Raised(tuple(frames), line.strip())
    return None


def users_frame(raised: Raised, root: Path) -> Frame | None:
    """The innermost frame of `raised` in a file of the workspace at `root` (the user's own code, not
    an installed package's, not Stepscope's), or None."""
    root = Path(root).resolve()
    for frame in reversed(raised.frames):
        if frame.file.startswith("<"):  # <string>, <frozen runpy>: no file
            continue
        path = Path(frame.file)
        if not path.is_absolute():
            continue
        try:
            inside = path.resolve().relative_to(root)
        except (ValueError, OSError, RuntimeError):
            continue
        if any(part in _INSTALLED or part.startswith(".") for part in inside.parts[:-1]):
            continue
        return frame
    return None
