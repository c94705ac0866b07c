"""The `.stepscope/` folder of a workspace: run folders and their files.

Invariants:
- Everything Stepscope writes for a run lives under `<root>/.stepscope/`, which is created with a
  `.gitignore` that ignores its whole content.
- A run folder is created with `exist_ok=False` under a fresh name: an earlier run is never touched.
- Files inside a run folder are written atomically (see jsonio).
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

STATE_DIR = ".stepscope"
RUNS_DIR = "runs"
# The names of the files inside a run folder are the run contract's (agent/protocol.py).
HISTORY_DB = "stepscope.db"  # the history of runs, an index of the run folders (history/)


def state_dir(root: Path) -> Path:
    """Return `<root>/.stepscope`, creating it (and its .gitignore) on first use."""
    d = Path(root) / STATE_DIR
    d.mkdir(parents=True, exist_ok=True)
    ignore = d / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# Created by Stepscope: runs and measurements stay out of git.\n*\n")
    return d


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")[:40] or "run"


@dataclass(frozen=True)
class RunFolder:
    path: Path

    def file(self, name: str) -> Path:
        return self.path / name

    @property
    def name(self) -> str:
        return self.path.name


NAME_ATTEMPTS = 64  # fresh random parts tried before giving up (65536 per second and label)


def _utc_stamp() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def new_run(root: Path, label: str, *, out: Path | None = None) -> RunFolder:
    """Create a new, empty run folder. `out` (from `--out`) must not exist yet.

    The name is `<UTC time>-<label>-<4 random hex>`; a name already taken (a run of the same second)
    is never reused: another random part is drawn, a bounded number of times."""
    from .errors import REFUSED, StepscopeError

    if out is not None:
        out = Path(out)
        refusal = StepscopeError(f"output folder already exists, refusing to overwrite: {out}", REFUSED)
        if out.exists():
            raise refusal
        out.parent.mkdir(parents=True, exist_ok=True)
        try:
            out.mkdir()
        except FileExistsError:  # created since the check above
            raise refusal from None
        return RunFolder(out.resolve())
    runs = state_dir(root) / RUNS_DIR
    runs.mkdir(exist_ok=True)
    stamp = _utc_stamp()
    for _ in range(NAME_ATTEMPTS):
        path = runs / f"{stamp}-{_slug(label)}-{secrets.token_hex(2)}"
        try:
            path.mkdir()  # never exist_ok: an earlier run's folder is never reused
            return RunFolder(path)
        except FileExistsError:
            continue
    raise StepscopeError(f"no free run folder name in {runs} after {NAME_ATTEMPTS} tries", REFUSED)


def find_root(start: Path) -> Path:
    """The workspace root for a file: the nearest folder above it with .git, pyproject.toml or
    .stepscope; else the file's own folder."""
    start = Path(start).resolve()
    here = start if start.is_dir() else start.parent
    for d in (here, *here.parents):
        if any((d / m).exists() for m in (".git", "pyproject.toml", STATE_DIR)):
            return d
    return here


def relpath(path: Path, root: Path) -> str:
    """Workspace-relative POSIX path (falls back to the absolute path outside the root)."""
    try:
        return Path(os.path.relpath(Path(path).resolve(), Path(root).resolve())).as_posix()
    except ValueError:
        return Path(path).resolve().as_posix()
