"""Notebooks as checkable source: the code cells, their IPython syntax set aside, and every
diagnostic put back in its cell.

Invariants:
- `cell_python(cell)` has exactly the lines of `cell`, and every line that is Python is unchanged;
  only IPython syntax is replaced, on its own lines: a line magic or shell escape (`%time f()`,
  `!pip freeze`), help (`obj?`, `obj??`, `?obj`), an automagic command (`pip install x`) becomes
  `pass` at its indentation (a `\\` continuation of one becomes empty); an assignment from one
  (`files = !ls`, `t = %timeit -o f()`) keeps its target and assigns `None`. They are recognised
  only where a statement starts: a line that continues one (inside brackets, a string or after a
  `\\`) is Python whatever it starts with (`% x` of a format, `!= y`).
- A cell magic (`%%name` on the cell's first line) whose body IPython runs as Python (`%%time`,
  `%%timeit`, `%%capture`, `%%prun`, `%%debug`) keeps its body; any other (`%%bash`,
  `%%writefile`, `%%html`, ...) is another language or a file's text: the whole cell is left out.
- `check_notebook` checks the code cells as one module (a loop in one cell sees names set in
  earlier ones); a cell that does not parse is left out. Every diagnostic, its fixes and the lines
  its message names are in (cell, line in that cell): a message says "cell 3, line 2", never a
  line of the cells joined together.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import replace

from .config import Config
from .engine import check_source
from .model import Diagnostic, Edit, Fix

PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})

_ESCAPE = re.compile(r"^(\s*)(?:[%!]|\?)")  # `%magic`, `!shell`, `?obj`, `??obj`
_HELP = re.compile(r"^(\s*)%{0,2}[A-Za-z_*][\w*]*(?:\.[\w*]+)*\?{1,2}\s*$")  # `obj?`, `a.b??`
_ASSIGN_FROM = re.compile(r"^(\s*[\w.]+(?:\s*,\s*[\w.]+)*\s*=)\s*[%!]")  # `x = !cmd`, `y = %time f()`
# IPython runs these without `%` (automagic, shell aliases) when the line is not Python.
_AUTOMAGIC = re.compile(r"^(\s*)(cd|ls|ll|lf|pwd|pip|conda|mkdir|rmdir|rm|cp|mv|cat|env|clear"
                        r"|history|load_ext|reload_ext|run|time|timeit|matplotlib|autoreload"
                        r"|who|whos|mamba|uv)(\s|$)")


def notebook_cells(data: bytes) -> list[str]:
    """The cells of a notebook, as text ("" for a markdown or raw cell, so numbers match the
    notebook's). Raises ValueError for a file that is not one."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"not a notebook ({str(e).splitlines()[0]})") from None
    cells = doc.get("cells") if isinstance(doc, dict) else None
    if not isinstance(cells, list):
        raise ValueError("not a notebook (no cells)")
    out: list[str] = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            out.append("")
            continue
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        out.append(text)
    return out


def cell_python(cell: str) -> str:
    """The cell with its IPython syntax replaced by Python of the same lines (see the module)."""
    lines = cell.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].startswith("%%"):
        words = lines[first][2:].split()
        if not words or words[0] not in PYTHON_CELL_MAGICS:
            return "\n".join("" for _ in lines)  # another language, or a file's text
        lines[first] = ""
    state = _Continuation()
    magic_continues = False  # the line before was IPython syntax ending in `\`
    for i, line in enumerate(lines):
        if magic_continues:
            lines[i] = ""
            magic_continues = line.rstrip().endswith("\\")
            continue
        if state.open:
            state.feed(line)
            continue
        replaced = _ipython_line(line)
        if replaced is None:
            state.feed(line)
            continue
        lines[i] = replaced
        magic_continues = line.rstrip().endswith("\\")
    return "\n".join(lines)


def _ipython_line(line: str) -> str | None:
    """The Python for a line that starts a statement, or None when it is Python already."""
    assigned = _ASSIGN_FROM.match(line)
    if assigned:
        return f"{assigned.group(1)} None"
    escaped = _ESCAPE.match(line) or _HELP.match(line)
    if escaped:
        return f"{escaped.group(1)}pass"
    automagic = _AUTOMAGIC.match(line)
    if automagic and not _parses(line.strip()):  # `ls = files()` is Python
        return f"{automagic.group(1)}pass"
    return None


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


class _Continuation:
    """Whether the next line continues a statement: open brackets, an open string, or a `\\` at
    the end of the line. A scan of the characters, enough to tell where statements start."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote: str | None = None  # the open string's closing quote(s)
        self.backslash = False

    @property
    def open(self) -> bool:
        return self.depth > 0 or self.quote is not None or self.backslash

    def feed(self, line: str) -> None:
        i, n = 0, len(line)
        while i < n:
            if self.quote is not None:
                if line[i] == "\\":
                    i += 2
                elif line.startswith(self.quote, i):
                    i += len(self.quote)
                    self.quote = None
                else:
                    i += 1
                continue
            ch = line[i]
            if ch == "#":
                n = i  # a comment: the rest of the line is not code
                break
            if ch in "([{":
                self.depth += 1
            elif ch in ")]}":
                self.depth = max(0, self.depth - 1)
            elif ch in "\"'":
                self.quote = line[i:i + 3] if line[i:i + 3] in ('"""', "'''") else ch
                i += len(self.quote)
                continue
            i += 1
        code = line[:n].rstrip()
        self.backslash = code.endswith("\\") and self.quote is None
        if self.quote is not None and len(self.quote) == 1 and not line.endswith("\\"):
            self.quote = None  # an unclosed one-line string ends with its line (a syntax error)


def unparsed_cells(cells: list[str]) -> list[tuple[int, int | None, str]]:
    """(1-based cell number, line in the cell or None, reason) of each code cell that does not
    parse once its IPython syntax is set aside."""
    out = []
    for index, cell in enumerate(cells, start=1):
        try:
            ast.parse(cell_python(cell))
        except SyntaxError as e:
            out.append((index, e.lineno, e.msg))
        except (ValueError, RecursionError, MemoryError) as e:
            out.append((index, None, str(e).splitlines()[0] if str(e) else type(e).__name__))
    return out


_LINE_REFERENCE = re.compile(r"\bline (\d+)\b")


def check_notebook(cells: list[str], path: str, config: Config) -> list[Diagnostic]:
    """Diagnostics for the code cells of a notebook, with `cell` set and cell-relative lines."""
    parts: list[str] = []
    owner: list[tuple[int, int]] = []  # joined line (0-based) -> (cell 1-based, line 1-based)
    for index, cell in enumerate(cells, start=1):
        text = cell_python(cell)
        if not _parses(text):
            text = "\n".join("" for _ in text.split("\n"))  # keep line numbers, drop the code
        cell_lines = text.split("\n")
        parts.extend(cell_lines)
        owner.extend((index, n) for n in range(1, len(cell_lines) + 1))
    combined = "\n".join(parts)

    def in_cell(match: re.Match) -> str:
        joined = int(match.group(1))
        if not 1 <= joined <= len(owner):
            return match.group(0)
        cell, line = owner[joined - 1]
        return f"cell {cell}, line {line}"

    out: list[Diagnostic] = []
    for diag in check_source(combined, path, config):
        cell, line = owner[diag.line - 1]
        end_cell, end_line = owner[diag.end_line - 1]
        if end_cell != cell:
            end_line, end_col = line, len(cells[cell - 1].split("\n")[line - 1])
        else:
            end_col = diag.end_col
        fixes = tuple(f for f in (_map_fix(f, owner, cell) for f in diag.fixes) if f)
        out.append(replace(diag, line=line, end_line=end_line, end_col=end_col, cell=cell,
                           fixes=fixes, message=_LINE_REFERENCE.sub(in_cell, diag.message)))
    return out


def _map_fix(fix: Fix, owner: list[tuple[int, int]], cell: int) -> Fix | None:
    edits: list[Edit] = []
    for e in fix.edits:
        if not (1 <= e.line <= len(owner) and 1 <= e.end_line <= len(owner)):
            return None
        (c1, l1), (c2, l2) = owner[e.line - 1], owner[e.end_line - 1]
        if c1 != cell or c2 != cell:
            return None  # a fix that reaches into another cell is not offered
        edits.append(Edit(l1, e.col, l2, e.end_col, e.new_text))
    return Fix(fix.title, tuple(edits))
