"""Which files `check` looks at, how they are read, and how notebooks become checkable source.

Invariants:
- `expand_paths` lists files once each, in a stable order. A directory inside a git work tree
  is listed with `git ls-files` (tracked and untracked-but-not-ignored), so .gitignore applies;
  elsewhere a walk skips hidden folders (`.git`, `.venv`, `.tox`, ...), installed and generated
  code by name (`_SKIP_DIRS`), and virtual environments by what makes them one (a `pyvenv.cfg`
  file, a `conda-meta` folder), whatever their name. A folder is never skipped for a name a
  project may use for its own code (`build`, `dist`, `env`, `venv` are checked unless they are
  environments).
- Reading never raises: a file that cannot be read, decoded or parsed gives a `FileError` with a
  one-line reason (and the line, when one is to blame); such a file is not counted as checked.
- A notebook is checked as one module made of its code cells (so a loop in one cell sees names set
  in earlier cells); IPython magics become `pass`, a cell that does not parse is left out (and
  named in a `FileError`: the notebook was only checked in part), and every diagnostic is mapped
  back to (cell, line in cell).
"""

from __future__ import annotations

import ast
import io
import json
import os
import re
import shutil
import subprocess
import tokenize
from dataclasses import dataclass, replace
from pathlib import Path

from .config import Config
from .engine import NotParsed, check_source, check_whole_source
from .model import Diagnostic, Edit, Fix

SOURCE_SUFFIXES = (".py", ".pyi", ".ipynb")
_SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "dist-packages"})


@dataclass(frozen=True)
class FileError:
    path: str
    message: str
    line: int | None = None  # the line to blame (for a notebook: in the cell named in `message`)


class PathNotFound(Exception):
    """A path given on the command line does not exist."""


def _git_files(folder: Path) -> list[Path] | None:
    git = shutil.which("git")
    if git is None:
        return None
    try:
        done = subprocess.run(
            [git, "-C", str(folder), "ls-files", "-z", "--cached", "--others",
             "--exclude-standard", "--", "."],
            capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None  # not a work tree
    names = [n for n in done.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    files = [folder / n for n in names if n.endswith(SOURCE_SUFFIXES)]
    return [f for f in files if f.is_file()]  # deleted-but-tracked files are not there


def is_environment(folder: Path) -> bool:
    """A Python virtual environment (venv, virtualenv, uv: `pyvenv.cfg`) or a conda one."""
    return (folder / "pyvenv.cfg").is_file() or (folder / "conda-meta").is_dir()


def _walk(folder: Path) -> list[Path]:
    found: list[Path] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS
                         and not is_environment(Path(root, d)))
        found.extend(Path(root, f) for f in sorted(files) if f.endswith(SOURCE_SUFFIXES))
    return found


def expand_paths(paths: list[str | Path]) -> list[Path]:
    """The files to check for the given files and folders. Raises `PathNotFound`."""
    out: list[Path] = []
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise PathNotFound(f"no such file or directory: {raw}")
        if path.is_dir():
            listed = _git_files(path)
            files = sorted(listed) if listed is not None else _walk(path)
        else:
            files = [path]
        for f in files:
            key = f.resolve()
            if key not in seen:
                seen.add(key)
                out.append(f)
    return out


def decode_source(data: bytes) -> str:
    """Decode Python source bytes (BOM, PEP 263 cookie, else UTF-8). Raises ValueError."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as e:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise ValueError(f"not UTF-8 text (byte {data[bad.start]:#04x} at offset "
                             f"{bad.start}) and no coding declaration") from None
        raise ValueError(str(e).splitlines()[0]) from None
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as e:
        if isinstance(e, UnicodeDecodeError):
            raise ValueError(f"not valid {encoding} text (byte {data[e.start]:#04x} at offset "
                             f"{e.start})") from None
        raise ValueError(f"unknown encoding {encoding}") from None
    return text.lstrip("\ufeff")


_MAGIC = re.compile(r"^(\s*)([%!]|\?\?|\w+\?\s*$)")
# IPython runs these without `%` (automagic, shell aliases) when the line is not Python.
_AUTOMAGIC = re.compile(r"^(\s*)(cd|ls|ll|lf|pwd|pip|conda|mkdir|rmdir|rm|cp|mv|cat|env|clear"
                        r"|history|load_ext|reload_ext|run|time|timeit|matplotlib|autoreload"
                        r"|who|whos|mamba|uv)(\s|$)")


def _is_automagic(line: str) -> bool:
    if not _AUTOMAGIC.match(line):
        return False
    try:
        ast.parse(line.strip())
    except SyntaxError:
        return True
    return False  # `ls = files()` is Python


def notebook_cells(data: bytes) -> list[str]:
    """The code cells of a notebook, as text. Raises ValueError for a file that is not one."""
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


def _neutralise_magics(cell: str) -> str:
    lines = cell.split("\n")
    if lines and lines[0].startswith("%%"):
        magic = lines[0][2:].split()[0] if lines[0][2:].split() else ""
        if magic not in ("time", "timeit", "capture", "prun"):
            return "\n".join("" for _ in lines)  # another language: not Python
        lines[0] = ""
    continued = False  # the line before was a magic ending in `\`: this one belongs to it
    for i, line in enumerate(lines):
        m = _MAGIC.match(line) or (_AUTOMAGIC.match(line) if _is_automagic(line) else None)
        if continued:
            lines[i] = ""
        elif m:
            lines[i] = f"{m.group(1)}pass"
        continued = (continued or bool(m)) and line.rstrip().endswith("\\")
    return "\n".join(lines)


def unparsed_cells(cells: list[str]) -> list[tuple[int, str]]:
    """(1-based cell number, reason) of each code cell that does not parse once its IPython
    magics are set aside."""
    out = []
    for index, cell in enumerate(cells, start=1):
        try:
            ast.parse(_neutralise_magics(cell))
        except SyntaxError as e:
            out.append((index, f"line {e.lineno}: {e.msg}" if e.lineno else e.msg))
        except (ValueError, RecursionError, MemoryError) as e:
            out.append((index, str(e).splitlines()[0] if str(e) else type(e).__name__))
    return out


def check_notebook(cells: list[str], path: str, config: Config) -> list[Diagnostic]:
    """Diagnostics for the code cells of a notebook, with `cell` set and cell-relative lines."""
    parts: list[str] = []
    owner: list[tuple[int, int]] = []  # combined line (0-based) -> (cell 1-based, line 1-based)
    for index, cell in enumerate(cells, start=1):
        text = _neutralise_magics(cell)
        try:
            ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            text = "\n".join("" for _ in text.split("\n"))  # keep line numbers, drop the code
        cell_lines = text.split("\n")
        parts.extend(cell_lines)
        owner.extend((index, n) for n in range(1, len(cell_lines) + 1))
    combined = "\n".join(parts)
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
                           fixes=fixes))
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


def check_file(path: Path, config: Config) -> tuple[list[Diagnostic], FileError | None]:
    """Diagnostics for one file on disk, and the reason it could not be checked (whole)."""
    shown = str(path.resolve())
    try:
        data = path.read_bytes()
    except OSError as e:
        return [], FileError(shown, f"cannot read ({e.strerror or type(e).__name__})")
    try:
        if path.suffix == ".ipynb":
            cells = notebook_cells(data)
            diagnostics = check_notebook(cells, shown, config)
            broken = unparsed_cells(cells)
            if not broken:
                return diagnostics, None
            names = "; ".join(f"cell {n} ({reason})" for n, reason in broken[:3])
            more = f" and {len(broken) - 3} more" if len(broken) > 3 else ""
            return diagnostics, FileError(
                shown, f"does not parse: {names}{more}; the other cells were checked")
        text = decode_source(data)
        return check_whole_source(text, shown, config), None
    except NotParsed as e:
        return [], FileError(shown, str(e), e.line)
    except ValueError as e:
        return [], FileError(shown, str(e))
