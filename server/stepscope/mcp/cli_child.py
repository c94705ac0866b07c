"""One `python -m stepscope <command> ... --json` in a child process, for one tool call.

Why a child: the commands that run the user's program (profile, measure, try) and the analysis of
a trace take seconds to minutes and load the trace engine; in a child they are the CLI's own code
path (the same run folders, the same history rows, the same one-line errors), the server process
never imports torch or the trace engine, and a cancelled call stops its command the way Ctrl-C
stops the CLI's.

Invariants:
- The child's stdout is read as exactly one JSON document (the CLI's `--json` contract) and never
  reaches the server's own stdout, which carries the MCP protocol; its stdin is closed.
- The child runs in a session of its own. A cancelled call sends SIGTERM to that session (the
  CLI cancels the run and its folder says "cancelled"), then SIGKILL after `STOP_GRACE_S`; the
  call returns only once the child is gone.
- A child that fails gives its last `stepscope: ...` line of stderr as the reason.
- Each `stepscope: ...` line of its stderr (a note, a warning, the error) is passed to `on_line` as
  it comes, for the client's progress; the program's own output is not (it stays in the run's
  program.log).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable, Sequence

import anyio

from ..jsonio import loads

STOP_GRACE_S = 10.0
STDERR_LINES_KEPT = 200


@dataclass(frozen=True)
class Outcome:
    """What one command said: its exit code, its JSON document (None when it printed none) and the
    last lines of its stderr (notes, the program's output, its one-line error)."""

    exit_code: int
    document: Any
    stderr_lines: list[str]

    @property
    def reason(self) -> str:
        """The command's own one-line error, else its last line of stderr."""
        for line in reversed(self.stderr_lines):
            if line.startswith("stepscope: ") and not line.startswith("stepscope: note: "):
                return line[len("stepscope: "):]
        tail = [line for line in self.stderr_lines if line.strip()]
        return tail[-1] if tail else f"the command ended with exit code {self.exit_code}"

    @property
    def notes(self) -> list[str]:
        """The command's `stepscope: note: ...` lines."""
        return [line[len("stepscope: note: "):] for line in self.stderr_lines if line.startswith("stepscope: note: ")]


def command(words: Sequence[str], program_args: Sequence[str] = ()) -> list[str]:
    """The child's argument list: this interpreter running this Stepscope, `--json` added."""
    argv = [sys.executable, "-m", "stepscope", *words, "--json"]
    if program_args:
        argv += ["--", *program_args]
    return argv


async def run_command(words: Sequence[str], *, cwd: Path, program_args: Sequence[str] = (),
                      on_line: Callable[[str], Awaitable[None]] | None = None) -> Outcome:
    """Run `stepscope <words> --json [-- program_args]` in `cwd` and wait for it (see the module's
    invariants for cancellation)."""
    env = dict(os.environ)
    # the child imports the same Stepscope as this server; a folder the interpreter already
    # imports from (an installed package) is left alone, so the program's path stays as it is
    package_parent = str(Path(__file__).resolve().parents[2])
    if package_parent not in {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    process = await anyio.open_process(command(words, program_args), cwd=str(cwd), env=env,
                                       stdin=subprocess.DEVNULL, start_new_session=True)
    stdout = bytearray()
    stderr_lines: list[str] = []

    async def read_stdout() -> None:
        assert process.stdout is not None
        async for chunk in process.stdout:
            stdout.extend(chunk)

    async def read_stderr() -> None:
        assert process.stderr is not None
        pending = b""
        async for chunk in process.stderr:
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for text in (line.decode("utf-8", "replace") for line in lines):
                stderr_lines.append(text)
                if on_line is not None and text.startswith("stepscope: "):
                    await on_line(text[len("stepscope: "):])
            del stderr_lines[:-STDERR_LINES_KEPT]
        if pending:
            stderr_lines.append(pending.decode("utf-8", "replace"))

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(read_stdout)
            group.start_soon(read_stderr)
        exit_code = await process.wait()
    except BaseException:
        with anyio.CancelScope(shield=True):
            await _stop(process)
        raise
    document = None
    if stdout.strip():
        try:
            document = loads(bytes(stdout))
        except ValueError:
            document = None
    return Outcome(exit_code=exit_code, document=document, stderr_lines=stderr_lines)


async def _stop(process: Any) -> None:
    """SIGTERM to the child's session (the CLI's cancel), SIGKILL if it outlives the grace."""
    if process.returncode is not None:
        return
    _signal_session(process.pid, signal.SIGTERM)
    with anyio.move_on_after(STOP_GRACE_S):
        await process.wait()
        return
    _signal_session(process.pid, signal.SIGKILL)
    await process.wait()


def _signal_session(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)  # the child leads its own session: its group is its pid
    except ProcessLookupError:
        pass
