"""One `python -m stepscope <command> ... --json` in a child process, for one tool call.

Why a child: the commands that run the user's program (profile, measure, try) and the analysis of
a trace take seconds to minutes and load the trace engine; in a child they are the CLI's own code
path (the same run folders, the same history rows, the same one-line errors), the server process
never imports torch or the trace engine, and a cancelled call stops its command the way Ctrl-C
stops the CLI's.

Invariants:
- The child imports the very Stepscope this server runs (installed, a source tree, or the VS Code
  extension's bundle) through folders given on its command line; the environment is passed on
  unchanged, so the user's program never imports Stepscope's dependencies in place of its own.
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


_ENTRY = ("import sys; sys.path[:0] = sys.argv.pop(1).split({sep!r}); "
          "from stepscope.cli import main; raise SystemExit(main())")


def import_path() -> list[str]:
    """The folders this process imports stepscope and its compiled dependencies from: the child
    imports exactly them, whether Stepscope is installed, a source tree or the editor's bundle."""
    import msgspec
    import orjson
    import zlib_ng

    import stepscope

    folders: list[str] = []
    for module in (stepscope, orjson, msgspec, zlib_ng):
        folder = str(Path(module.__file__).resolve().parent.parent)
        if folder not in folders:
            folders.append(folder)
    return folders


def command(words: Sequence[str], program_args: Sequence[str] = ()) -> list[str]:
    """The child's argument list: this interpreter running this Stepscope, `--json` added. The
    child is isolated (`-I`: no PYTHONPATH, no user site-packages) with this server's import folders
    passed on its command line, never in the environment, which the user's program inherits."""
    entry = _ENTRY.format(sep=os.pathsep)
    argv = [sys.executable, "-I", "-X", "utf8", "-c", entry, os.pathsep.join(import_path()), *words, "--json"]
    if program_args:
        argv += ["--", *program_args]
    return argv


async def run_command(words: Sequence[str], *, cwd: Path, program_args: Sequence[str] = (),
                      on_line: Callable[[str], Awaitable[None]] | None = None) -> Outcome:
    """Run `stepscope <words> --json [-- program_args]` in `cwd` and wait for it (see the module's
    invariants for cancellation)."""
    process = await anyio.open_process(command(words, program_args), cwd=str(cwd),
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
