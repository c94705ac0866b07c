"""Start the agent for a `CaptureRequest`, forward the program's output, and stop it on demand.

Invariants:
- The run folder is new (workspace.new_run); the agent writes the trace and scenario into it, this
  module writes spec.json, files.json, program.log and status.json. Nothing else is written.
- The agent runs in its own process group, so a timeout or a cancel stops the program and every
  worker it started (DataLoader workers included), and nothing survives a finished run.
- Results come from files and the events pipe, never from the program's stdout, which is only
  forwarded (to `output`) and logged.
- On any ending other than success, stray partial files are removed and status.json says why.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TextIO

from .. import jsonio, workspace
from ..agent import protocol
from ..errors import NO_STEP, OK, PROGRAM_FAILED, REFUSED, TIMEOUT, StepscopeError
from .request import CaptureRequest
from .provenance import git_state

AGENT_BOOTSTRAP = Path(__file__).resolve().parent.parent / "agent" / "bootstrap.py"
KILL_GRACE_S = 3.0

_AGENT_EXIT_TO_CLI = {
    protocol.EXIT_OK: OK,
    protocol.EXIT_PROGRAM_FAILED: PROGRAM_FAILED,
    protocol.EXIT_REFUSED: REFUSED,
    protocol.EXIT_NO_STEP: NO_STEP,
}


class Cancelled(StepscopeError):
    exit_code = 130


@dataclass
class CaptureResult:
    run_dir: Path
    exit_code: int
    reason: str | None
    traces: list[Path] = field(default_factory=list)
    first_run: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == OK


def _file_table(req: CaptureRequest) -> dict:
    files = {"f0": workspace.relpath(req.target_file, req.root)}
    return {"root": str(Path(req.root).resolve()), "files": files}


def _spec(req: CaptureRequest, run: workspace.RunFolder) -> dict:
    if req.entry_module:
        entry = {"kind": "module", "name": req.entry_module}
    else:
        entry = {"kind": "script", "path": str(req.entry_script or req.target_file)}
    return {
        "run_dir": str(run.path),
        "root": str(Path(req.root).resolve()),
        "entry": entry,
        "argv": list(req.args),
        "target": {"path": str(req.target_file), "line": req.target_line, "function": req.target_function},
        "schedule": req.schedule.as_dict(),
        "options": {"cpu_only": req.cpu_only, "shapes": req.shapes, "stack": req.stack,
                    "memory": req.memory, "run_to_end": req.run_to_end, "depth": req.depth,
                    "line_regions": req.line_regions},
        "scenario": {
            "step": {"file": str(req.target_file), "line": req.target_line, "function": req.target_function,
                     "kind": "loop" if req.target_function is None else "function"},
            "program": {"entry": entry, "args": list(req.args), "cwd": str(req.cwd or req.root),
                        "python": req.python},
            "options": {"cpu_only": req.cpu_only, "shapes": req.shapes, "stack": req.stack,
                        "memory": req.memory},
            "note": req.note,
            "git": git_state(req.root),
        },
    }


def _pump(stream, sinks: list[TextIO]) -> None:
    for chunk in iter(lambda: stream.readline(), ""):
        for sink in sinks:
            try:
                sink.write(chunk)
                sink.flush()
            except (OSError, ValueError):
                pass


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + KILL_GRACE_S
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def run_capture(
    req: CaptureRequest,
    *,
    output: TextIO | None = None,
    on_event: Callable[[dict], None] | None = None,
    cancel: threading.Event | None = None,
) -> CaptureResult:
    """Run one capture to its end. `output` receives the program's stdout and stderr as text."""
    first_run = not (Path(req.root) / workspace.STATE_DIR / workspace.RUNS_DIR).exists()
    run = workspace.new_run(req.root, Path(req.target_file).stem, out=req.out)
    jsonio.write_json(run.file(workspace.FILES), _file_table(req), replace=False)
    jsonio.write_json(run.file(workspace.SPEC), _spec(req, run), replace=False)

    read_fd, write_fd = os.pipe()
    env = {**os.environ, **req.env, protocol.EVENTS_FD_ENV: str(write_fd), protocol.RUN_ENV: "1",
           "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE", "")}
    if not env["PYTHONDONTWRITEBYTECODE"]:
        del env["PYTHONDONTWRITEBYTECODE"]
    cmd = [req.python, str(AGENT_BOOTSTRAP), str(run.file(workspace.SPEC))]
    log = open(run.file(workspace.PROGRAM_LOG), "w", encoding="utf-8", errors="replace")
    try:
        proc = subprocess.Popen(
            cmd, cwd=str(req.cwd or req.root), env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8",
            errors="replace", pass_fds=(write_fd,), start_new_session=True,
        )
    except OSError as e:
        log.close()
        os.close(read_fd)
        os.close(write_fd)
        _finish(run, "failed", REFUSED, f"cannot start {req.python}: {e.strerror}")
        raise StepscopeError(f"cannot start the interpreter {req.python}: {e.strerror}", REFUSED) from e
    os.close(write_fd)

    events: list[dict] = []

    def read_events() -> None:
        with os.fdopen(read_fd, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    event = jsonio.loads(line)
                except Exception:
                    continue
                events.append(event)
                if on_event is not None:
                    on_event(event)

    sinks = [log] + ([output] if output is not None else [])
    threads = [
        threading.Thread(target=_pump, args=(proc.stdout, sinks), daemon=True),
        threading.Thread(target=_pump, args=(proc.stderr, sinks), daemon=True),
        threading.Thread(target=read_events, daemon=True),
    ]
    for t in threads:
        t.start()

    deadline = time.monotonic() + req.timeout_s if req.timeout_s else None
    ended_by: str | None = None
    while proc.poll() is None:
        if cancel is not None and cancel.is_set():
            ended_by = "cancelled"
            break
        if deadline is not None and time.monotonic() > deadline:
            ended_by = "timeout"
            break
        time.sleep(0.05)
    _kill_group(proc)  # also ends workers left behind by a finished program
    for t in threads:
        t.join(timeout=5)
    log.close()

    traces = sorted(run.path.glob("trace*.json"))
    if ended_by == "cancelled":
        _finish(run, "cancelled", 130, "cancelled")
        raise Cancelled("cancelled; the program and its workers were stopped")
    if ended_by == "timeout":
        reason = f"time limit of {req.timeout_s:g} s reached; the program and its workers were stopped"
        _finish(run, "timeout", TIMEOUT, reason)
        return CaptureResult(run.path, TIMEOUT, reason, [], first_run)

    failed = [e for e in events if e.get("event") == "failed"]
    code = _AGENT_EXIT_TO_CLI.get(proc.returncode)
    if code is None:
        reason = f"the program's process ended abnormally (status {proc.returncode})"
        if proc.returncode < 0:
            reason = f"the program was killed by signal {-proc.returncode}"
        code = PROGRAM_FAILED
    else:
        reason = failed[-1].get("reason") if failed else None
    if code == OK and not traces:
        code, reason = PROGRAM_FAILED, "the window completed but no trace was written"
    _finish(run, "complete" if code == OK else "failed", code, reason)
    return CaptureResult(run.path, code, reason, traces if code in (OK, PROGRAM_FAILED) else [], first_run)


def _finish(run: workspace.RunFolder, status: str, code: int, reason: str | None) -> None:
    for partial in run.path.glob("*.partial"):
        partial.unlink(missing_ok=True)
    jsonio.write_json(run.file(workspace.STATUS), {"status": status, "exit": code, "reason": reason},
                      replace=False)
