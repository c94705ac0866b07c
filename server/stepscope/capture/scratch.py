"""The workspace with one change made to it, beside it, for a while (`stepscope try`).

`ScratchCopy(root, texts, real=[...], folders=[...])` is a context manager: on entry it makes
`<root>/.stepscope/scratch/<id>/`, a copy of the workspace as the program sees it, in which each
file of `texts` (workspace-relative path → text) has that text; on exit — a normal end, an error, a
cancel — it removes it again.

How it is made (so that it costs nothing however large the workspace's data is):
- A folder on the way to a changed file, to a file of `real` (the step's file, the program's
  entry) or to a folder of `folders` (the program's working directory) is a real folder; every
  other entry in it is a symbolic link to the user's entry (a data folder, a package, a config).
- A changed file holds its new text; a file of `real` is a copy (Python takes the folder of the
  script it runs from its real path, and the working directory is a real path too: both must lie
  in the copy, or the program would import the user's files instead of the changed ones).
- `.git` and `.stepscope` of the workspace are not in the copy.

Invariants:
- The user's files are never written: links are made in the copy and removed (never followed) with
  it; the changed texts exist only in the copy.
- A copy left behind by a process that was killed (SIGKILL, power loss) is removed by the next
  `ScratchCopy` of the workspace: every copy records the pid that owns it (owned.py).
- The program runs as it would in the workspace, with one limit: it writes through the links into
  the user's folders, as the baseline does (both sides run the program for real).
"""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path, PurePosixPath
from typing import Iterable, Mapping

from .. import workspace
from ..errors import UsageError
from . import owned

SCRATCH_DIR = "scratch"
_LEFT_OUT = frozenset({".git", workspace.STATE_DIR})


class ScratchCopy:
    def __init__(self, root: Path, texts: Mapping[str, str], *, real: Iterable[Path] = (),
                 folders: Iterable[Path] = ()):
        self.root = Path(root).resolve()
        self.texts = dict(texts)
        self.real = [Path(p) for p in real]
        self.folders = [Path(p) for p in folders]
        self.path: Path | None = None  # the copy's root while entered

    def __enter__(self) -> "ScratchCopy":
        parent = workspace.state_dir(self.root) / SCRATCH_DIR
        parent.mkdir(exist_ok=True)
        for path in owned.stale(parent):
            _remove(path)
        path = parent / secrets.token_hex(4)
        owned.claim(path)
        try:
            path.mkdir()
            self.path = path
            self._fill(path)
        except BaseException:
            _remove(path)
            self.path = None
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.path is not None:
            _remove(self.path)
            self.path = None

    def map_path(self, path: Path) -> Path:
        """Where `path` (in the user's workspace) is in the copy; a path outside the workspace stays."""
        assert self.path is not None, "only while the copy exists"
        path = Path(path).resolve()
        try:
            return self.path / path.relative_to(self.root)
        except ValueError:
            return path

    def _relative(self, path: Path) -> PurePosixPath | None:
        try:
            return PurePosixPath(Path(path).resolve().relative_to(self.root).as_posix())
        except ValueError:
            return None  # outside the workspace: used from where it is

    def _fill(self, copy: Path) -> None:
        files: set[PurePosixPath] = {PurePosixPath(p) for p in self.texts}
        files |= {rel for rel in map(self._relative, self.real) if rel is not None}
        folders: set[PurePosixPath] = {PurePosixPath(".")}
        for rel in files:
            if rel.parts and rel.parts[0] in _LEFT_OUT:
                raise UsageError(f"{rel}: a change may not touch {rel.parts[0]}/")
            folders |= set(rel.parents)
        for rel in (r for r in map(self._relative, self.folders) if r is not None):
            folders |= {rel, *rel.parents}
        for folder in sorted(folders, key=lambda p: len(p.parts)):
            source = self.root / folder
            target = copy / folder
            target.mkdir(exist_ok=True)
            try:
                entries = list(os.scandir(source))
            except FileNotFoundError:
                continue  # a folder only a new file makes
            for entry in entries:
                rel = folder / entry.name
                if folder == PurePosixPath(".") and entry.name in _LEFT_OUT:
                    continue
                if rel in folders:
                    continue  # made real on its turn
                if rel in files:
                    if str(rel) not in self.texts:
                        shutil.copy2(entry.path, target / entry.name)
                    continue
                os.symlink(entry.path, target / entry.name)
        for rel, text in self.texts.items():
            out = copy / rel
            source = self.root / rel
            out.write_bytes(text.encode("utf-8", "surrogateescape"))
            if source.exists():
                shutil.copymode(source, out)


def _remove(path: Path) -> None:
    """Remove one copy, whatever state it is in: links are unlinked, never followed."""
    if path.is_symlink():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path, ignore_errors=True)
    owned.release(path)
