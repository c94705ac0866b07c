"""A run's analysis in a child process of the server's own interpreter: `stepscope analyze --json
--timeline RUN` (the report on stdout; the trace panel's timeline.json written into the run folder).

The language server never analyses a trace itself. A fault in a compiled kernel, or a trace that
exhausts memory, ends the child, not the editor's diagnostics; and the child, which has no other
thread, may fork (forking.py), so the editor gets the same parallel analysis as the CLI.

Invariants:
- The child runs this interpreter isolated from the user's environment (`-I`: no PYTHONPATH, no user
  site-packages) with the folders this process imported stepscope and its dependencies from first
  on its path, so it runs exactly the analysis the server ships.
- The report is read from the child's stdout, the one JSON document `--json` prints; nothing is
  written here (the caller writes report.json).
- Every ending other than a report is `AnalysisFailed` with a one-line reason that keeps the run
  folder and says how to retry; a cancel kills the child's whole process group and raises
  `AnalysisCancelled` within one poll.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from .. import errors, jsonio

POLL_S = 0.1
#: the `exit` of an analysis that ended without a report and without a reason of its own (sysexits'
#: EX_SOFTWARE); a child killed by signal N has 128 + N, as a shell says it
NO_REPORT = 70
_ENTRY = ("import sys; sys.path[:0] = sys.argv.pop(1).split({sep!r}); "
          "from stepscope.cli import main; raise SystemExit(main())")


class AnalysisFailed(errors.StepscopeError):
    """The analysis ended without a report (its reason in one line; the run folder is kept)."""


class AnalysisCancelled(errors.StepscopeError):
    exit_code = 130


def import_path() -> list[str]:
    """The folders this process imports stepscope and its compiled dependencies from."""
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


def command(run_dir: Path) -> list[str]:
    entry = _ENTRY.format(sep=os.pathsep)
    return [sys.executable, "-I", "-X", "utf8", "-c", entry, os.pathsep.join(import_path()),
            "analyze", "--json", "--timeline", str(run_dir)]


class AnalysisChild:
    """One analysis child: `start`, then `result(cancel)`."""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir).resolve()  # the child runs in it: a relative path would not do
        self.process = subprocess.Popen(command(self.run_dir), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, cwd=self.run_dir, start_new_session=True)

    @property
    def pid(self) -> int:
        return self.process.pid

    def result(self, cancel: threading.Event | None = None) -> dict:
        """The report, once the child has printed it and ended."""
        out = err = b""
        while True:
            if cancel is not None and cancel.is_set():
                self.stop()
                raise AnalysisCancelled("cancelled during the analysis; the run folder is kept: "
                                        f"{self.run_dir} (`stepscope analyze {self.run_dir}` analyses it)")
            try:
                out, err = self.process.communicate(timeout=POLL_S)
                break
            except subprocess.TimeoutExpired:
                continue
        code = self.process.returncode
        if code != 0:
            raise AnalysisFailed(self._reason(code, err), code if code > 0 else 128 - code)
        try:
            report = jsonio.loads(out)
        except ValueError:
            report = None
        if not isinstance(report, dict):
            raise AnalysisFailed(f"the analysis printed no report; the run folder is kept: {self.run_dir}",
                                 NO_REPORT)
        return report

    def _reason(self, code: int, stderr: bytes) -> str:
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return (f"the analysis stopped unexpectedly ({name}); the run folder is kept: {self.run_dir} "
                    f"(`stepscope analyze {self.run_dir}` retries it)")
        said = [line for line in stderr.decode(errors="replace").splitlines() if line.strip()]
        last = said[-1].removeprefix("stepscope: ") if said else f"exit status {code}"
        return f"the trace could not be analysed: {last}"

    def stop(self) -> None:
        """Kill the child and anything it started; reap it."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.communicate()


def analyse(run_dir: Path, cancel: threading.Event | None = None) -> dict:
    """The report of a run folder, analysed in a child process."""
    child = AnalysisChild(run_dir)
    try:
        return child.result(cancel)
    finally:
        if child.process.poll() is None:  # an exception here (not the child's): leave nothing behind
            child.stop()
