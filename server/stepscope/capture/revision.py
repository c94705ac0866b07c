"""A git revision of the user's project, checked out for a while beside it (`measure --against REV`).

`RevisionCheckout(root, rev)` is a context manager: on entry it resolves REV to a commit and adds a
detached git worktree of it under `<root>/.stepscope/worktrees/`; on exit — a normal end, an
error, a cancel — it removes that worktree again (`git worktree remove --force`, then `prune`).

Invariants:
- The user's files, index, branches and stash are never touched: a detached worktree has its own
  index and HEAD under `.git/worktrees/<name>`, which the removal deletes. Hooks do not run
  (`core.hooksPath` points at an empty folder for these commands).
- The checkout holds the revision's committed files only: untracked and ignored files (data
  folders, local configuration) are not there. A program that needs them finds them missing on
  that side, and the run says so.
- A checkout left behind by a process that was killed (SIGKILL, power loss) is removed by the next
  `RevisionCheckout` of the workspace: every checkout records the pid that owns it (owned.py).
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

from .. import workspace
from ..errors import UsageError
from . import owned

WORKTREES_DIR = "worktrees"
GIT_TIMEOUT_S = 120


class RevisionError(UsageError):
    """REV is not a commit of the workspace's repository, or it cannot be checked out."""


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as no_hooks:
        try:
            result = subprocess.run(["git", "-c", f"core.hooksPath={no_hooks}", "-C", str(cwd), *args],
                                    capture_output=True, text=True, timeout=GIT_TIMEOUT_S)
        except FileNotFoundError:
            raise RevisionError("git is not installed: --against needs it") from None
        except subprocess.TimeoutExpired:
            raise RevisionError(f"git {args[0]} took more than {GIT_TIMEOUT_S} s") from None
    if check and result.returncode != 0:
        reason = (result.stderr.strip().splitlines() or ["failed"])[-1]
        raise RevisionError(f"git {args[0]}: {reason}")
    return result


class RevisionCheckout:
    def __init__(self, root: Path, rev: str):
        self.root = Path(root).resolve()
        self.rev = rev
        self.commit: str | None = None
        self.path: Path | None = None  # the checkout's top-level folder while entered
        self.toplevel: Path | None = None  # the user's repository's top-level folder

    def __enter__(self) -> "RevisionCheckout":
        if self.rev.startswith("-"):
            raise RevisionError(f"not a revision: {self.rev!r}")
        top = _git(self.root, "rev-parse", "--show-toplevel", check=False)
        if top.returncode != 0:
            raise RevisionError(f"--against needs a git repository, and {self.root} is not in one")
        self.toplevel = Path(top.stdout.strip()).resolve()
        found = _git(self.toplevel, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{self.rev}^{{commit}}",
                     check=False)
        if found.returncode != 0:
            raise RevisionError(f"{self.rev!r} is not a commit of {self.toplevel}")
        self.commit = found.stdout.strip()
        folder = workspace.state_dir(self.root) / WORKTREES_DIR
        folder.mkdir(exist_ok=True)
        remove_stale(self.toplevel, folder)
        path = folder / f"{self.commit[:12]}-{secrets.token_hex(3)}"
        owned.claim(path)
        try:
            _git(self.toplevel, "worktree", "add", "--detach", "--quiet", str(path), self.commit)
        except BaseException:
            _remove(self.toplevel, path)
            raise
        self.path = path
        return self

    def __exit__(self, *exc: object) -> None:
        if self.path is not None and self.toplevel is not None:
            _remove(self.toplevel, self.path)
            self.path = None

    def map_path(self, path: Path) -> Path:
        """The file of the checkout that `path` (in the user's repository) is."""
        assert self.path is not None and self.toplevel is not None, "only while the checkout exists"
        relative = Path(path).resolve().relative_to(self.toplevel)
        return self.path / relative

    def has_file(self, path: Path) -> bool:
        relative = Path(path).resolve().relative_to(self.toplevel).as_posix()
        return _git(self.toplevel, "cat-file", "-e", f"{self.commit}:{relative}", check=False).returncode == 0

    def read_file(self, path: Path) -> str:
        return self.map_path(path).read_text(encoding="utf-8")


def _remove(toplevel: Path, path: Path) -> None:
    """Remove one checkout and its record in the repository, whatever state it is in."""
    _git(toplevel, "worktree", "remove", "--force", "--force", str(path), check=False)
    if path.exists():
        shutil.rmtree(path, ignore_errors=True)
    _git(toplevel, "worktree", "prune", check=False)
    owned.release(path)


def remove_stale(toplevel: Path, folder: Path) -> list[Path]:
    """Remove the checkouts under `folder` whose owning process is gone; return them."""
    removed = owned.stale(folder)
    for path in removed:
        _remove(toplevel, path)
    return removed
