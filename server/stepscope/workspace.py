"""The `.stepscope/` folder of a workspace: run folders and their files.

Invariants:
- Everything Stepscope writes for a run lives under `<root>/.stepscope/`, which is created with a
  `.gitignore` that ignores its whole content.
- A run folder is created with `exist_ok=False` under a fresh name: an earlier run is never touched.
- Files inside a run folder are written atomically (see jsonio).
- The text a run measured of a workspace file (`measured_text`) is its run folder's `sources.json`
  entry, else the file on disk when it has not changed since the run started (spec.json was
  written); otherwise it is not known (None), never guessed. `keep_sources` writes sources.json once
  (never over an earlier one): a run's files as they ran, kept for comparing and showing it later.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

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
    """Workspace-relative POSIX path (the absolute path for a file outside the root: an installed
    package's module that holds the step)."""
    try:
        rel = Path(os.path.relpath(Path(path).resolve(), Path(root).resolve())).as_posix()
    except ValueError:  # another drive
        return Path(path).resolve().as_posix()
    return Path(path).resolve().as_posix() if rel == ".." or rel.startswith("../") else rel


def run_sources(run_dir: Path) -> dict[str, str]:
    """The texts in a run folder's sources.json: workspace-relative path -> text ({} without one)."""
    from . import jsonio
    from .agent.protocol import SOURCES

    try:
        doc = jsonio.read_json(Path(run_dir) / SOURCES)
    except (OSError, ValueError):
        return {}
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, dict):
        return {}
    return {rel: text for rel, text in files.items() if isinstance(rel, str) and isinstance(text, str)}


def run_started_ns(run_dir: Path) -> int | None:
    """When a run's program started, as a file time: spec.json is written just before it starts."""
    from .agent.protocol import SPEC

    try:
        return (Path(run_dir) / SPEC).stat().st_mtime_ns
    except OSError:
        return None


def unchanged_text(path: Path, since_ns: int | None) -> str | None:
    """The file's text when it has not changed since `since_ns` (a file time); None otherwise."""
    try:
        if since_ns is None or Path(path).stat().st_mtime_ns > since_ns:
            return None
        return Path(path).read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return None


def measured_texts(run_dir: Path, root: Path, paths: Iterable[Path]) -> dict[str, str | None]:
    """The text the run measured of each file (by workspace-relative path; see the module's
    invariants): from sources.json, else the file when unchanged since the run started, else None."""
    kept = run_sources(run_dir)
    started = run_started_ns(run_dir)
    out: dict[str, str | None] = {}
    for path in paths:
        rel = relpath(Path(path), root)
        out[rel] = kept[rel] if rel in kept else unchanged_text(Path(root) / rel, started)
    return out


def keep_sources(run_dir: Path, root: Path, paths: Iterable[Path]) -> list[str]:
    """Write the run's sources.json: the text each of `paths` had when the run ran (`measured_texts`),
    once (an earlier sources.json is what ran, and stays). Returns the files left out: changed since
    the run started, so what ran is not known."""
    from . import jsonio
    from .agent.protocol import SOURCES

    texts = measured_texts(run_dir, root, sorted({Path(p) for p in paths}))
    try:
        jsonio.write_json(Path(run_dir) / SOURCES,
                          {"version": 1, "files": {rel: text for rel, text in texts.items() if text is not None}},
                          replace=False)
    except FileExistsError:
        pass  # written before: the first copy is what ran
    return sorted(rel for rel, text in texts.items() if text is None)
