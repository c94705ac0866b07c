"""Forking: when this process may fork, and how a child runs and leaves. One place for the trace
reader's workers and the analysis.

A forked child starts at once with everything this process has imported (no interpreter to start,
nothing to import again). It is safe only on Linux (macOS's system libraries are not safe to use in
a forked child) and while this process runs no other Python thread: a fork copies the locks another
thread may hold. The language server has threads, so it never forks; the CLI does.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Callable


def can_fork() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "fork") and threading.active_count() == 1


def fork(child: Callable[[], None]) -> int | None:
    """Fork; the child runs `child()` and leaves with `os._exit` (status 0 if it returned, 1 if it
    raised): no exit handlers, no flushing of buffers it shares with this process. Returns the
    child's pid here, or None if the fork failed (out of memory or processes)."""
    try:
        pid = os.fork()
    except OSError:
        return None
    if pid == 0:
        code = 1
        try:
            child()
            code = 0
        finally:
            os._exit(code)
    return pid
