"""Worker processes that decode slices of a large trace in parallel.

Protocol over each worker's stdin/stdout: a frame is an 8-byte little-endian length followed by
that many bytes. The parent sends a slice of whole events (raw JSON, no brackets); the worker
answers with a pickled `("ok", Trace)` or `("error", reason)`. A zero-length frame (or end of
input) stops the worker.

Invariants:
- Each worker has at most one slice outstanding, and slice i goes to worker i % n: the parent
  collects results in file order, and neither side can block the other on a full pipe.
- Workers are plain `python -m stepscope.trace.workers` processes of the same interpreter: they
  never re-import the caller's main module (unlike multiprocessing's spawn/forkserver), so they
  work from the CLI, the language server, a notebook or stdin alike.
- Pickle is used only between this process and workers it started itself.
"""

from __future__ import annotations

import gc
import os
import pickle
import struct
import subprocess
import sys
from pathlib import Path
from typing import BinaryIO

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


class WorkerPool:
    """`n` decoding processes; `decode_in_order(slices)` yields decoded parts in slice order."""

    def __init__(self, n: int):
        package_parent = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = package_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.procs = [
            # stderr discarded: a worker's failure reaches the user as the parent's one-line reason
            subprocess.Popen([sys.executable, "-m", "stepscope.trace.workers"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
            for _ in range(n)
        ]
        for proc in self.procs:
            _widen_pipe(proc.stdin)
            _widen_pipe(proc.stdout)
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
        for p in self.procs:
            try:
                if p.stdin:
                    p.stdin.close()
            except OSError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            if p.stdout:
                p.stdout.close()


def _serve() -> None:
    from .reader import _decode_part

    gc.disable()  # a worker only decodes: no reference cycles, and the collector's re-scans cost time
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
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
        _serve()
    except (KeyboardInterrupt, BrokenPipeError):
        pass
