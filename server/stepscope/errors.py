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


class NoStepError(StepscopeError):
    """No loop is the step, or more than one could be: exit 6.

    The message is the CLI's wording; the fields let another surface say the same in its own words:
    `kind` is "not-in-loop" (the line asked about is in no loop), "no-step" (no loop looks like a
    step) or "ambiguous" (several do: `candidates` lists them as (line, why), in source order), and
    `file` is the file looked in.
    """

    exit_code = NO_STEP

    def __init__(self, message: str, *, kind: str, file: str, line: int | None = None,
                 candidates: tuple[tuple[int, str], ...] = ()):
        super().__init__(message)
        self.kind, self.file, self.line, self.candidates = kind, file, line, tuple(candidates)
