"""How the user's program failed: the exception, the user's own line, and its message.

    where(exc, workspace_root, agent_dir)   # "AssertionError at train.py:42"
    message(exc)                            # "Torch not compiled with CUDA enabled"

main.py words the run's reason from them: `the program raised AssertionError at train.py:42 before
the window completed: Torch not compiled with CUDA enabled`.

The line named is the innermost frame of the traceback in the user's workspace code: under the
workspace root and in no installed package (a virtualenv inside the workspace holds torch too), and
not the agent's own. Without such a frame (the program failed inside a library it called from
elsewhere), the innermost frame that is not the agent's. The message is the exception's first line,
cut to `MAX_MESSAGE` characters: it is the program's text, shown to the user as is, never parsed.
Standard library only (this runs in the user's interpreter).
"""

from __future__ import annotations

import os
import traceback

MAX_MESSAGE = 200
_PACKAGE_DIRS = ("site-packages", "dist-packages")


def _in_workspace(filename: str, root: str) -> bool:
    path = os.path.abspath(filename)
    root = os.path.abspath(root)
    if not path.startswith(root.rstrip(os.sep) + os.sep):
        return False
    return not any(part in _PACKAGE_DIRS for part in path[len(root):].split(os.sep))


def user_frame(exc: BaseException, root: str, agent_dir: str) -> traceback.FrameSummary | None:
    """The innermost frame of the user's workspace code in the exception's traceback."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not os.path.abspath(f.filename).startswith(agent_dir)]
    own = [f for f in frames if _in_workspace(f.filename, root)]
    return (own or frames or [None])[-1]


def where(exc: BaseException, root: str, agent_dir: str) -> str:
    """`AssertionError at train.py:42`: the exception's type and the user's line (relative to the
    workspace; a file outside it by its name)."""
    text = type(exc).__name__
    frame = user_frame(exc, root, agent_dir)
    if frame is not None:
        at = os.path.relpath(frame.filename, root) if _in_workspace(frame.filename, root) \
            else os.path.basename(frame.filename)
        text += f" at {at.replace(os.sep, '/')}:{frame.lineno}"
    return text


def message(exc: BaseException) -> str | None:
    """The exception's message, its first line, cut to `MAX_MESSAGE` characters (None when empty)."""
    try:
        said = str(exc).strip()
    except Exception:  # a broken __str__ of the program's own exception
        return None
    if not said:
        return None
    first = said.splitlines()[0]
    return first if len(first) <= MAX_MESSAGE else first[:MAX_MESSAGE - 1] + "…"
