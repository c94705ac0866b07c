"""Compute one pure analysis function in a forked child while this process computes another.

    with alongside(operator_evidence, trace, links, window) as operators:
        att = attribute(trace, links, steps, ...)   # here, meanwhile
        evidence = operators.result()

Invariants:
- The result, and any exception, are exactly those of calling the function here: the child sends
  its pickled result through a pipe; if anything goes wrong there (an exception, a result that does
  not pickle, the child killed), `result()` calls the function in this process instead.
- A child is forked only where that is safe (`stepscope.forking`: Linux, no other Python thread, so
  never in the language server) and pays off: at least two cores and work large enough
  (`worth_it`). A fork that fails (no memory) computes inline.
- The child shares the parent's memory copy-on-write and changes nothing the parent can see; it
  leaves with `os._exit` (no cleanup handlers, no flushing of the parent's buffered output).
- Leaving the `with` block always reaps the child, killing it first if its result was not taken.
"""

from __future__ import annotations

import os
import pickle
import signal
from typing import Any, Callable, Generic, TypeVar

from .. import forking

T = TypeVar("T")

#: below this many trace events a fork costs more than the work it moves (about 10 ms)
MIN_EVENTS = 200_000


def cores() -> int:
    return os.cpu_count() or 1


def can_fork() -> bool:
    """Whether forking is possible, safe and useful here (`STEPSCOPE_ANALYSIS_FORK=0` turns it off)."""
    return (forking.can_fork() and cores() >= 2
            and os.environ.get("STEPSCOPE_ANALYSIS_FORK", "1") != "0")


class _Alongside(Generic[T]):
    def __init__(self, fn: Callable[..., T], args: tuple, kwargs: dict, fork: bool):
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.pid: int | None = None
        self.fd: int | None = None
        if fork:
            self._fork()

    def _fork(self) -> None:
        read_fd, write_fd = os.pipe()

        def compute_and_send() -> None:  # in the child
            os.close(read_fd)
            data = pickle.dumps(self.fn(*self.args, **self.kwargs), protocol=pickle.HIGHEST_PROTOCOL)
            view = memoryview(data)
            while view:
                view = view[os.write(write_fd, view):]

        pid = forking.fork(compute_and_send)
        os.close(write_fd)
        if pid is None:  # the fork failed: compute here when asked
            os.close(read_fd)
            return
        self.pid, self.fd = pid, read_fd

    def result(self) -> T:
        if self.pid is not None:
            assert self.fd is not None
            chunks = []
            while chunk := os.read(self.fd, 1 << 20):
                chunks.append(chunk)
            ok = self._reap() == 0
            if ok and chunks:
                try:
                    return pickle.loads(b"".join(chunks))
                except Exception:
                    pass  # computed here below
        return self.fn(*self.args, **self.kwargs)

    def _reap(self, kill: bool = False) -> int | None:
        if self.pid is None:
            return None
        if kill:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _, status = os.waitpid(self.pid, 0)
        self.pid = None
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        return os.waitstatus_to_exitcode(status)

    def __enter__(self) -> _Alongside[T]:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._reap(kill=True)


def alongside(fn: Callable[..., T], *args: Any, worth_it: bool = True, **kwargs: Any) -> _Alongside[T]:
    """`fn(*args, **kwargs)`, computed in a forked child when possible and `worth_it`, else here
    when `result()` is called."""
    return _Alongside(fn, args, kwargs, fork=worth_it and can_fork())
