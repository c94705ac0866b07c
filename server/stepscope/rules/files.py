"""Which files `check` looks at and how they are read (a notebook's cells: `notebooks`).

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
- A notebook is checked as one module made of its code cells, IPython syntax set aside
  (`notebooks`). A cell that does not parse is left out and named in a `FileError` of its own
  (`cell`, `line` in it, `in_part`: the notebook's other cells were checked); the notebook is then
  not counted as checked.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tokenize
from dataclasses import dataclass
from pathlib import Path

from .config import Config
from .engine import NotParsed, check_whole_source
from .model import Diagnostic
from .notebooks import check_notebook, notebook_cells, unparsed_cells

__all__ = ["FileError", "PathNotFound", "check_file", "check_notebook", "decode_source",
           "expand_paths", "is_environment"]

SOURCE_SUFFIXES = (".py", ".pyi", ".ipynb")
_SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "dist-packages"})


@dataclass(frozen=True)
class FileError:
    """A file, or a notebook's cell, that could not be checked, and why (one line)."""

    path: str
    message: str
    line: int | None = None  # the line to blame (for a notebook: in `cell`)
    cell: int | None = None  # a notebook's code cell that does not parse
    in_part: bool = False  # the rest of the file was checked (a notebook's other cells)

    @property
    def reason(self) -> str:
        """The message as said to the user: what could not be checked, and what was."""
        return self.message if self.in_part else f"{self.message}; not checked"


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


def check_file(path: Path, config: Config) -> tuple[list[Diagnostic], list[FileError]]:
    """Diagnostics for one file on disk, and why it could not be checked whole (none: it was)."""
    shown = str(path.resolve())
    try:
        data = path.read_bytes()
    except OSError as e:
        return [], [FileError(shown, f"cannot read ({e.strerror or type(e).__name__})")]
    try:
        if path.suffix == ".ipynb":
            cells = notebook_cells(data)
            return check_notebook(cells, shown, config), [
                FileError(shown, f"does not parse ({reason}); the other cells were checked",
                          line, cell, in_part=True)
                for cell, line, reason in unparsed_cells(cells)]
        text = decode_source(data)
        return check_whole_source(text, shown, config), []
    except NotParsed as e:
        return [], [FileError(shown, str(e), e.line)]
    except ValueError as e:
        return [], [FileError(shown, str(e))]
