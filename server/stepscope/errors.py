"""Errors that end a command, with the exit codes of the CLI contract.

Every entry point turns bad input into one of these: a one-line reason, never a traceback.
"""

from __future__ import annotations

OK = 0
FOUND = 1  # `check` found problems / `redact --check` found unsafe content
USAGE = 2  # bad flag, missing file, not a trace
PROGRAM_FAILED = 3  # the user's program failed before the window completed
TIMEOUT = 4
REFUSED = 5  # GPU collection unavailable for a GPU program, or the output exists
NO_STEP = 6  # no step found, or the choice of loop is ambiguous


class StepscopeError(Exception):
    """A failure to report as one line on stderr and an exit code."""

    exit_code = USAGE

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(StepscopeError):
    exit_code = USAGE


class NotATraceError(UsageError):
    """The file exists but is not a PyTorch profiler trace (or is truncated / invalid)."""
