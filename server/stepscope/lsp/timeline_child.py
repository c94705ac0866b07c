"""Timelines that are not on disk, computed in a child process: a range of a run's window at a finer
level than its timeline.json, or the whole window of a run analysed before timelines existed.

    child = TimelineChild()
    doc = child.ask({"trace": "/…/trace.json", "start_us": 1200.0, "end_us": 1800.0, "cap": 200_000})
    doc = child.ask({"trace": "/…/trace.json", "whole": True, "cap": 200_000, "write": True})
    child.stop()

`ask` blocks: the language server calls it from a worker thread. The server never reads a trace
(docs/architecture.md); the child does, and keeps the span table (analysis/timeline.py) of the trace
it was last asked about, so zooming into a large run reads its trace once, not once per range.

Invariants:
- One child at a time, one request at a time (a lock); it runs this interpreter isolated from the
  user's environment with the server's own import path, as the analysis child does.
- The child answers every request with one line of JSON on its stdout, `{"document": …}` or
  `{"error": "one line"}`; whatever the analysis might print goes to its stderr. A request it
  cannot answer (a bad range, an unreadable trace) does not end it.
- A child that ends without answering, or takes longer than `LIMIT_S`, is killed with its process
  group: `TimelineUnavailable` with one line; the next request starts a new child. A child started
  for an earlier request that ends before it answers (killed while idle) says nothing about this
  request: the request goes once to a new child.
- The child ends by itself when its stdin closes (the server has ended) or after `IDLE_S` without
  a request, so a span table is never held longer than the panel needs it.
- With `write`, a whole-window document is written into the run folder as the analysis names it,
  never over an existing file (analysis/panel.py's `write_timelines`).
"""

from __future__ import annotations

import collections
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from .. import errors, jsonio
from .analysis_child import import_path

#: seconds one request may take (reading a large trace on a loaded machine is the slow part)
LIMIT_S = 600.0
#: seconds without a request after which the child lets its span table go and exits
IDLE_S = 900.0
_ENTRY = ("import sys; sys.path[:0] = sys.argv.pop(1).split({sep!r}); "
          "from stepscope.lsp.timeline_child import serve; serve()")


class TimelineUnavailable(errors.StepscopeError):
    """No timeline could be made (its reason in one line)."""


class _ChildEnded(Exception):
    """The child closed its output before it answered."""


class _ReusedChildEnded(Exception):
    """A child started for an earlier request ended before it answered this one."""


class TimelineChild:
    def __init__(self, limit_s: float = LIMIT_S):
        self.limit_s = limit_s
        self._process: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._stderr: collections.deque[str] = collections.deque(maxlen=20)
        self._last_code: int | None = None  # how the last child ended
        self._drainer: threading.Thread | None = None
        self._last_used = 0.0  # when the child last answered (monotonic)
        self._fresh = False  # whether the child of the current request was started for it

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None and self._process.poll() is None else None

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """The child's document for `request`; `TimelineUnavailable` with one line otherwise."""
        with self._lock:
            try:
                line = self._exchange(request)
            except _ReusedChildEnded:
                # the child this request went to had ended while idle (killed, or ending as it was
                # asked): that says nothing about the request, so it goes once to a fresh child
                line = self._exchange(request)
            self._last_used = time.monotonic()
        try:
            answer = jsonio.loads(line)
        except ValueError:
            answer = None
        if not isinstance(answer, dict) or not isinstance(answer.get("document"), dict):
            reason = answer.get("error") if isinstance(answer, dict) else None
            raise TimelineUnavailable(str(reason) if reason else "the timeline process gave no timeline")
        return answer["document"]

    def stop(self) -> None:
        with self._lock:
            self._kill()

    def _exchange(self, request: dict[str, Any]) -> bytes:
        """One request and its answer line. A child that was already running and ends before it
        answers raises `_ReusedChildEnded`; a fresh one, `TimelineUnavailable` with its reason."""
        process = self._running()
        reused = not self._fresh
        try:
            process.stdin.write(jsonio.dumps(request) + b"\n")
            process.stdin.flush()
            return self._read_line(process)
        except (OSError, _ChildEnded):
            self._kill()
            if reused:
                raise _ReusedChildEnded() from None
            raise TimelineUnavailable(self._ended_reason()) from None

    def _running(self) -> subprocess.Popen:
        # a child about to end for idleness is not trusted with a request: start a fresh one
        fresh_enough = time.monotonic() - self._last_used < 0.9 * IDLE_S
        if self._process is not None and self._process.poll() is None and fresh_enough:
            self._fresh = False
            return self._process
        self._fresh = True
        self._kill()
        self._stderr.clear()
        entry = _ENTRY.format(sep=os.pathsep)
        self._process = subprocess.Popen(
            [sys.executable, "-I", "-X", "utf8", "-c", entry, os.pathsep.join(import_path())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        self._drainer = threading.Thread(target=self._drain, args=(self._process,), daemon=True)
        self._drainer.start()
        return self._process

    def _drain(self, process: subprocess.Popen) -> None:
        for raw in process.stderr:
            text = raw.decode(errors="replace").strip()
            if text:
                self._stderr.append(text)

    def _read_line(self, process: subprocess.Popen) -> bytes:
        """One line from the child's stdout, within the time limit (the child is killed past it)."""
        fd = process.stdout.fileno()
        chunks: list[bytes] = []
        deadline = time.monotonic() + self.limit_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._kill()
                raise TimelineUnavailable(f"the timeline took longer than {self.limit_s:.0f} s; it was stopped")
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise _ChildEnded()
            end = chunk.find(b"\n")
            if end >= 0:
                chunks.append(chunk[:end])
                return b"".join(chunks)
            chunks.append(chunk)

    def _ended_reason(self) -> str:
        said = self._stderr[-1] if self._stderr else ""
        code = self._last_code
        how = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
        return f"the timeline process ended ({how})" + (f": {said}" if said else "")

    def _kill(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._last_code = process.wait()
        if self._drainer is not None:
            self._drainer.join(timeout=2)  # its last words, for the reason
        for stream in (process.stdin, process.stdout):
            try:
                stream.close()
            except OSError:
                pass


# -- the child's side ---------------------------------------------------------------------------------

def serve() -> None:
    """The child: answer requests from stdin until it closes or stays idle for IDLE_S."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything the analysis prints goes to stderr, never into an answer
    table: list = [None, None]  # [key of the trace, its span table]
    stdin = sys.stdin.buffer
    while True:
        ready, _, _ = select.select([stdin], [], [], IDLE_S)
        if not ready:
            return
        line = stdin.readline()
        if not line:
            return
        try:
            answer = {"document": _answer(jsonio.loads(line), table)}
        except errors.StepscopeError as e:
            answer = {"error": str(e)}
        except MemoryError:
            table[:] = [None, None]
            answer = {"error": "not enough memory to build this timeline"}
        except Exception as e:  # noqa: BLE001 — any failure is an answer; the child goes on
            answer = {"error": f"{type(e).__name__}: {e}".splitlines()[0]}
        out.write(jsonio.dumps(answer) + b"\n")
        out.flush()


def _answer(request: Any, table: list) -> dict:
    from ..analysis.panel import document_of, with_redactable, write_timelines
    from ..analysis.report import timeline_spans
    from ..analysis.timeline import summarize

    if not isinstance(request, dict) or not isinstance(request.get("trace"), str):
        raise errors.UsageError("not a timeline request")
    trace = Path(request["trace"])
    try:
        st = trace.stat()
    except OSError as e:
        raise errors.UsageError(f"cannot read the trace {trace.name}: {e.strerror or e}") from None
    key = (str(trace), st.st_mtime_ns, st.st_size)
    if table[0] != key:
        table[:] = [None, None]  # let the last table go before reading the next trace
        table[:] = [key, timeline_spans(trace)]
    spans = table[1]
    cap = request.get("cap")
    if request.get("whole"):
        doc = document_of(spans, cap=cap)
        if request.get("write"):
            problems = write_timelines(trace.parent, {trace: jsonio.dumps(doc)})
            doc["notes"] = [*doc.get("notes", []), *problems]
        return doc
    return with_redactable(summarize(spans, request.get("start_us"), request.get("end_us"), cap=cap))
