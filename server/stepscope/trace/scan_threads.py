"""Scan slices of a trace on several threads while the reader commits them in file order.

The compiled column scanner (_columns.c) runs without the GIL, so scanning threads work in
parallel with each other and with the inflating thread: no process to start, nothing to pickle,
no ids to remap. This is how the reader goes parallel wherever the scanner is built (the CLI and
the language server alike); worker processes (workers.py) remain for the pure-Python path.

Invariants:
- Each thread's scanner holds one slice at a time: it takes its next slice only after the reader
  has committed its previous one, so at most `n` slices are in flight and a scanner is never used
  by two threads at once.
- Slices are committed in file order, through the reader's one builder, so the trace and every id
  in it are identical to a one-thread read.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


class ScanThreads:
    def __init__(self, builder: Any, n: int):
        self.builder = builder
        # the builder's own scanner is one of them: while threads scan, the reader scans nothing itself
        self.idle = [builder.scanner, *(builder.new_scanner() for _ in range(n - 1))]
        self.pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="stepscope-scan")
        self.in_flight: deque[tuple[bytes, Any, Future]] = deque()

    def add(self, raw: bytes) -> None:
        """Scan `raw` (whole events, no brackets) in a thread; commits earlier slices as needed."""
        if not self.idle:
            self._commit_oldest()
        scanner = self.idle.pop()
        self.in_flight.append((raw, scanner, self.pool.submit(scanner.scan, raw)))

    def drain(self) -> None:
        """Commit every slice in flight (before the reader adds anything itself)."""
        while self.in_flight:
            self._commit_oldest()

    def _commit_oldest(self) -> None:
        raw, scanner, future = self.in_flight.popleft()
        self.builder.add_scanned(raw, future.result(), scanner)
        self.idle.append(scanner)

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.in_flight.clear()
