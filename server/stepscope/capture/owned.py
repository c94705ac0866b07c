"""Folders a process makes beside the workspace for a while, and removes again: who owns each.

Every such folder `<parent>/<name>` has `<parent>/<name>.stepscope-owner` holding the pid of the
process that made it (`claim`). A process killed before it removed its folder (SIGKILL, power loss)
leaves both behind: `stale(parent)` names the folders whose owner is gone, for the next process to
remove. `measure --against` (revision.py) and `try` (scratch.py) share this.
"""

from __future__ import annotations

import os
from pathlib import Path

OWNER_SUFFIX = ".stepscope-owner"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def owner_file(path: Path) -> Path:
    return Path(f"{path}{OWNER_SUFFIX}")


def claim(path: Path) -> None:
    """Record this process as the owner of the folder `path` (made next, or just made)."""
    owner_file(path).write_text(str(os.getpid()))


def release(path: Path) -> None:
    owner_file(path).unlink(missing_ok=True)


def stale(parent: Path) -> list[Path]:
    """The folders under `parent` whose owning process is gone (or whose record cannot be read)."""
    out = []
    for owner in sorted(Path(parent).glob(f"*{OWNER_SUFFIX}")):
        try:
            pid = int(owner.read_text().strip())
        except (OSError, ValueError):
            pid = -1
        if pid > 0 and alive(pid):
            continue
        out.append(Path(parent) / owner.name[: -len(OWNER_SUFFIX)])
    return out
