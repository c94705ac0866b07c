"""Worker processes that decode slices of a large trace in parallel.

Protocol over each worker's stdin/stdout: a frame is an 8-byte little-endian length followed by
that many bytes. The parent sends a slice of whole events (raw JSON, no brackets); the worker
answers with a pickled `("ok", Trace)` or `("error", reason)`. A zero-length frame (or end of
input) stops the worker.

Invariants:
- Each worker has at most one slice outstanding, and slice i goes to worker i % n: the parent
  collects results in file order, and neither side can block the other on a full pipe.
- Where this process may fork (`stepscope.forking`: the CLI, not the language server), workers are
  forked children, running at once with what is already imported (a new interpreter takes 0.1-0.25 s
  to start and import); a child closes every pipe end of the workers forked before it, so each
  worker sees the end of its input when the parent closes it. Elsewhere, and if a fork fails,
  workers are plain `python -m stepscope.trace.workers` processes of the same interpreter: they
  never re-import the caller's main module (unlike multiprocessing's spawn/forkserver), so they
  work from the CLI, the language server, a notebook or stdin alike.
- Pickle is used only between this process and workers it started itself.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import BinaryIO

from .. import forking

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

_LEN = struct.Struct("<Q")


class WorkerError(Exception):
    """A worker failed: invalid JSON in its slice, or the worker stopped."""


def _read_exact(f: BinaryIO, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = f.read(n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _read_frame(f: BinaryIO) -> bytes | None:
    head = _read_exact(f, _LEN.size)
    if head is None:
        return None
    (n,) = _LEN.unpack(head)
    if n == 0:
        return None
    return _read_exact(f, n)


def _write_frame(f: BinaryIO, data: bytes) -> None:
    f.write(_LEN.pack(len(data)))
    f.write(data)
    f.flush()


PIPE_BYTES = 1 << 20  # Linux's default limit for one pipe (/proc/sys/fs/pipe-max-size)


def _widen_pipe(f: BinaryIO | None) -> None:
    """Give a pipe room for half a slice: with the default 64 KB, each 2 MB slice crossed it in
    32 turns between writer and reader (measured: the parent's largest cost with many workers)."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl else None
    if f is None or set_size is None:
        return
    try:
        fcntl.fcntl(f.fileno(), set_size, PIPE_BYTES)
    except OSError:
        pass  # a lower limit on this system: the default size works, only slower


class _Worker:
    """One decoding process: the pipe to its input, the pipe from its output, and how to end it."""

    def __init__(self, stdin: BinaryIO, stdout: BinaryIO, *, popen: subprocess.Popen | None = None,
                 pid: int | None = None):
        self.stdin, self.stdout, self.popen, self.pid = stdin, stdout, popen, pid
        _widen_pipe(stdin)
        _widen_pipe(stdout)

    @classmethod
    def started(cls) -> _Worker:
        package_parent = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = package_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        # stderr discarded: a worker's failure reaches the user as the parent's one-line reason
        popen = subprocess.Popen([sys.executable, "-m", "stepscope.trace.workers"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        return cls(popen.stdin, popen.stdout, popen=popen)  # type: ignore[arg-type]

    @classmethod
    def forked(cls, others: list[_Worker]) -> _Worker | None:
        """A forked worker, or None if the fork failed (out of memory or processes)."""
        in_read, in_write = os.pipe()
        out_read, out_write = os.pipe()

        def serve() -> None:  # in the child
            os.close(in_write)
            os.close(out_read)
            for other in others:  # their file objects are left alone: nothing may be flushed from here
                os.close(other.stdin.fileno())
                os.close(other.stdout.fileno())
            # as for a started worker: its failure reaches the user as the parent's one-line reason
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)
            os.close(devnull)
            with open(in_read, "rb") as stdin, open(out_write, "wb") as stdout:
                _serve(stdin, stdout)

        pid = forking.fork(serve)
        os.close(in_read)
        os.close(out_write)
        if pid is None:
            os.close(in_write)
            os.close(out_read)
            return None
        return cls(open(in_write, "wb"), open(out_read, "rb"), pid=pid)

    def close_input(self) -> None:
        try:
            self.stdin.close()
        except OSError:
            pass

    def end(self, timeout: float) -> None:
        """Wait for the process to exit (its input closed), killing it after `timeout` seconds."""
        if self.popen is not None:
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        elif self.pid is not None:
            deadline = time.monotonic() + timeout
            while os.waitpid(self.pid, os.WNOHANG) == (0, 0):
                if time.monotonic() > deadline:
                    os.kill(self.pid, signal.SIGKILL)
                    os.waitpid(self.pid, 0)
                    break
                time.sleep(0.005)
            self.pid = None
        self.stdout.close()


class WorkerPool:
    """`n` decoding processes: `submit` slices, then `drain`; parts come back in slice order."""

    def __init__(self, n: int):
        fork = forking.can_fork()
        self.procs: list[_Worker] = []
        for _ in range(n):
            worker = _Worker.forked(self.procs) if fork else None
            self.procs.append(worker or _Worker.started())
        self.sent = 0  # slices sent
        self.received = 0  # results collected

    def submit(self, raw: bytes) -> list:
        """Send a slice; returns the parts that had to be collected first (in order)."""
        done = []
        worker = self.sent % len(self.procs)
        if self.sent - self.received >= len(self.procs):
            done.append(self._collect())
        try:
            _write_frame(self.procs[worker].stdin, raw)  # type: ignore[arg-type]
        except (BrokenPipeError, OSError):
            raise WorkerError("a decoding worker stopped (out of memory?)") from None
        self.sent += 1
        return done

    def _collect(self):
        proc = self.procs[self.received % len(self.procs)]
        frame = _read_frame(proc.stdout)  # type: ignore[arg-type]
        if frame is None:
            raise WorkerError("a decoding worker stopped (out of memory?)")
        status, payload = pickle.loads(frame)
        self.received += 1
        if status != "ok":
            raise WorkerError(payload)
        return payload

    def drain(self) -> list:
        out = []
        while self.received < self.sent:
            out.append(self._collect())
        return out

    def close(self) -> None:
        for worker in self.procs:
            worker.close_input()
        for worker in self.procs:
            worker.end(timeout=5)


def _serve(stdin: BinaryIO, stdout: BinaryIO) -> None:
    from .reader import _decode_part

    gc.disable()  # a worker only decodes: no reference cycles, and the collector's re-scans cost time
    while True:
        raw = _read_frame(stdin)
        if raw is None:
            return
        try:
            reply = ("ok", _decode_part(raw))
        except ValueError as e:
            reply = ("error", str(e))
        except MemoryError:
            reply = ("error", "a decoding worker ran out of memory")
        del raw
        _write_frame(stdout, pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL))


if __name__ == "__main__":
    try:
        _serve(sys.stdin.buffer, sys.stdout.buffer)
    except (KeyboardInterrupt, BrokenPipeError):
        pass
