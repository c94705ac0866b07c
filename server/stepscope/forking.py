"""Whether this process may fork: one rule for the trace reader's workers and the analysis.

A forked child starts at once with everything this process has imported (no interpreter to start,
nothing to import again). It is safe only on Linux (macOS's system libraries are not safe to use in
a forked child) and while this process runs no other Python thread: a fork copies the locks another
thread may hold. The language server has threads, so it never forks; the CLI does.
"""

from __future__ import annotations

import os
import sys
import threading


def can_fork() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "fork") and threading.active_count() == 1
