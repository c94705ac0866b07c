"""Errors that end a command, with the exit codes of the CLI contract.

Every entry point turns bad input into one of these: a one-line reason, never a traceback. The
classes say what went wrong, so callers choose by class, never by the wording of a message; the
fields carry the facts (path, byte position, limit) for any surface that shows them its own way.
"""

from __future__ import annotations

from pathlib import Path

OK = 0
FOUND = 1  # `check` found problems / `redact --check` found unsafe content
USAGE = 2  # bad flag, missing file, not a trace
PROGRAM_FAILED = 3  # the user's program failed before the window completed
TIMEOUT = 4
REFUSED = 5  # GPU collection unavailable for a GPU program, or the output exists
NO_STEP = 6  # no step found, or the choice of loop is ambiguous
RESOURCE = 7  # this machine could not do the work: out of memory, no process could start, a read failed


class StepscopeError(Exception):
    """A failure to report as one line on stderr and an exit code."""

    exit_code = USAGE

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(StepscopeError):
    exit_code = USAGE


class ResourceError(StepscopeError):
    """The input may be fine, but this machine could not read or analyse it (memory, processes,
    a failing disk). Not a usage error: the same command can work elsewhere or later."""

    exit_code = RESOURCE

    def __init__(self, path: Path | str, reason: str):
        self.path, self.reason = Path(path), reason
        super().__init__(f"{path}: {reason}")


class NotATraceError(UsageError):
    """The file exists but is not a PyTorch profiler trace that can be read (or is truncated /
    invalid). `NotATraceError(path, reason)` says `<path>: <reason>`; a message of its own
    (`NotATraceError(message)`) is kept as given, with no path."""

    def __init__(self, path: Path | str, reason: str | None = None):
        if reason is None:
            self.path, self.reason = None, str(path)
            super().__init__(str(path))
            return
        self.path, self.reason = Path(path), reason
        super().__init__(f"{path}: {reason}")


class EmptyTrace(NotATraceError):
    """An empty file, or a trace with no events (or none that span any time)."""


class NotJSON(NotATraceError):
    """The file does not hold JSON text at all (a binary file, UTF-16 text, ...)."""


class NotAProfilerTrace(NotATraceError):
    """Valid JSON that is not a profiler trace (an execution trace, a configuration): `found` is
    what the document is ("dict", "list", ...)."""

    def __init__(self, path: Path | str, found: str, *, reason: str | None = None):
        self.found = found
        super().__init__(path, reason or f"JSON {found} without traceEvents: not a profiler trace")


class InvalidTraceJSON(NotATraceError):
    """The trace's JSON is not valid at byte `position` of its text (after decompression):
    `problem` says what is there, e.g. "NaN is not a JSON number"; `where` which part of the
    document holds it ("in traceEvents", "after traceEvents", ...)."""

    def __init__(self, path: Path | str, position: int, problem: str, *, where: str = "in traceEvents", of: str = ""):
        self.position, self.problem, self.where = position, problem, where
        super().__init__(path, f"invalid JSON {where} at byte {position}{of}: {problem}")


class TruncatedTrace(NotATraceError):
    """The file ends before its JSON (or its gzip stream) does: `position` is where the text stops."""

    def __init__(self, path: Path | str, position: int | None, reason: str):
        self.position = position
        super().__init__(path, reason)


class TraceTooLarge(NotATraceError):
    """The trace exceeds a bound that keeps the memory of reading and analysing it bounded: more
    than `limit` of `what` ("events", "distinct names", "bytes of names", "bytes in one event")."""

    def __init__(self, path: Path | str, what: str, limit: int, reason: str):
        self.what, self.limit = what, limit
        super().__init__(path, reason)


class NoStepError(StepscopeError):
    """No loop or function is the step, or more than one could be: exit 6.

    The message is the CLI's wording; the fields let another surface say the same in its own words:
    `kind` is "not-in-loop" (the line asked about is in no loop), "in-function" (it is in no loop but
    in a function: `candidates` holds that function), "no-step" (nothing looks like a step:
    `candidates` lists the loops seen), "ambiguous" (several loops or functions could be),
    "no-function" or "ambiguous-function" (a function named is not there, or several are).
    `candidates` are (line, why, flag) in source order, flag being what names it on the command line
    (`--line 12`, `--function LitModel.training_step`), and `file` is the file looked in.
    """

    exit_code = NO_STEP

    def __init__(self, message: str, *, kind: str, file: str, line: int | None = None,
                 candidates: tuple[tuple[int, str, str], ...] = ()):
        super().__init__(message)
        self.kind, self.file, self.line, self.candidates = kind, file, line, tuple(candidates)
