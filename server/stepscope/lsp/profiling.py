"""The `stepscope.profile` command: position → step loop → capture → report → editor result.

The capture runs in a worker thread and the analysis in a child process (analysis_child.py); this
coroutine waits on them so that a `$/cancelRequest` (or the client cancelling the progress) stops
the program, or the analysis, promptly. Progress is reported to the client's work-done token when
it sent one. The run is then held by the run registry under its id and shown in the documents it
measured.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from lsprotocol import types

from .. import errors, jsonio, workspace
from ..agent import protocol
from . import analysis_child, results

FIRST_RUN_NOTICE = ("Stepscope ran your step for real: it performs real updates (optimizer steps, writes). "
                    "Profile an experimental state, never weights you must keep; your program sees "
                    "STEPSCOPE_RUN=1 and can skip saving.")

if TYPE_CHECKING:
    from .server import StepscopeServer

log = logging.getLogger("stepscope.lsp")


class ProfileFailed(Exception):
    def __init__(self, message: str, exit_code: int, run_dir: str | None = None):
        super().__init__(message)
        self.exit_code, self.run_dir = exit_code, run_dir


def path_of(uri: str) -> Path:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        raise ProfileFailed(f"only files on disk can be profiled (got a {parsed.scheme}: document)", errors.USAGE)
    return Path(unquote(parsed.path))


def _root_for(ls: "StepscopeServer", path: Path) -> Path:
    best: Path | None = None
    for folder in ls.workspace.folders.values():
        try:
            root = path_of(folder.uri)
        except ProfileFailed:
            continue
        if root == path or root in path.parents:
            if best is None or len(str(root)) > len(str(best)):
                best = root
    return best or workspace.find_root(path)


class _Progress:
    """Thread-safe progress reporting to a client-created token (no-op without one)."""

    def __init__(self, ls: "StepscopeServer", token: Any, loop: asyncio.AbstractEventLoop):
        self._ls, self._token, self._loop = ls, token, loop

    def begin(self, title: str) -> None:
        if self._token is not None:
            self._ls.work_done_progress.begin(self._token, types.WorkDoneProgressBegin(
                title=title, cancellable=True, percentage=0))

    def report(self, message: str, percentage: int | None = None) -> None:
        if self._token is None:
            return
        value = types.WorkDoneProgressReport(message=message, percentage=percentage)
        self._loop.call_soon_threadsafe(self._ls.work_done_progress.report, self._token, value)

    def end(self, message: str) -> None:
        if self._token is not None:
            self._ls.work_done_progress.end(self._token, types.WorkDoneProgressEnd(message=message))

    def cancelled(self) -> bool:
        if self._token is None:
            return False
        future = self._ls.work_done_progress.tokens.get(self._token)
        return bool(future is not None and future.cancelled())


class _LogLines:
    """A text sink that forwards the program's output to the client's log, line by line."""

    def __init__(self, ls: "StepscopeServer", loop: asyncio.AbstractEventLoop):
        self._ls, self._loop = ls, loop

    def write(self, text: str) -> None:
        text = text.rstrip("\n")
        if text:
            params = types.LogMessageParams(type=types.MessageType.Log, message=f"[program] {text}")
            self._loop.call_soon_threadsafe(self._ls.window_log_message, params)

    def flush(self) -> None:
        pass


def _build_request(ls: "StepscopeServer", args: dict[str, Any]):
    from ..agent.protocol import ProfileOptions
    from ..capture import options
    from ..capture.request import CaptureRequest, RunOptions
    from ..capture.step import resolve_step

    path = path_of(str(args.get("uri", "")))
    if not path.is_file():
        raise ProfileFailed(f"{path} is not a saved file; save it before profiling", errors.USAGE)
    position = args.get("position") or {}
    line = int(position.get("line", 0)) + 1
    try:
        loop_line = resolve_step(path, line)
    except errors.NoStepError as e:
        if e.kind != "not-in-loop":
            raise ProfileFailed(no_step_message(e), e.exit_code) from None
        # The cursor is outside any loop: fall back to the loop that is clearly the step.
        try:
            loop_line = resolve_step(path, None)
        except errors.NoStepError as e2:
            raise ProfileFailed(no_step_message(e2), e2.exit_code) from None
        except errors.StepscopeError as e2:
            raise ProfileFailed(str(e2), e2.exit_code) from None
    except errors.StepscopeError as e:
        raise ProfileFailed(str(e), e.exit_code) from None
    python = args.get("python") or ls.options.get("interpreter") or sys.executable
    root = _root_for(ls, path)
    # The stepscope.profile.* settings: those sent with the command over those given at
    # initialisation. VS Code sends them with every command, read for the file's folder, so a
    # change applies to the next run without a restart; other editors may set them once.
    try:
        settings = options.merge_settings([("initializationOptions.profile", ls.options.get("profile")),
                                           ("the command's profile argument", args.get("profile"))])
        profile, run = options.from_settings(settings, ProfileOptions, RunOptions)
    except options.SettingError as e:
        raise ProfileFailed(str(e), errors.USAGE) from None
    launch = _launch_options(args.get("launch"), path, str(python))
    try:
        return CaptureRequest(root=root, target_file=path, target_line=loop_line, python=str(python),
                              profile=profile, run=run, **launch)
    except errors.UsageError as e:  # a launcher and stepscope.profile.nproc > 1
        name = (args.get("launch") or {}).get("name")
        raise ProfileFailed(f"launch configuration {name!r}: {e} (set stepscope.profile.nproc to 1)", errors.USAGE) \
            from None


def no_step_message(e: errors.NoStepError) -> str:
    """Why no loop was profiled, in the editor's words (the CLI's name its flags)."""
    name = Path(e.file).name
    if e.kind == "ambiguous":
        listing = "; ".join(f"line {line} ({why})" for line, why in e.candidates)
        return (f"the cursor is not in a loop, and more than one loop in {name} could be the step: {listing}; "
                "put the cursor inside the one to profile")
    if e.kind == "no-step":
        return (f"the cursor is not in a loop, and no loop in {name} looks like a training or inference step; "
                "put the cursor inside the loop to profile")
    return f"line {e.line} of {name} is not inside a for/while loop; put the cursor inside the loop to profile"


def _launch_options(launch: Any, path: Path, python: str) -> dict[str, Any]:
    """The program's start, arguments, environment and folder, from the editor's launch
    configuration when it sent one; else `python <the file>` from the file's folder. A configuration
    that runs the program under a launcher (`launcher`: torchrun's module and its arguments, the
    client found the program among them) starts the ranks with `python -m <module> <args>`; a
    launcher module sent as the program is refused in one line."""
    from ..capture.request import LAUNCHER_MODULES, check_entry_module

    if not isinstance(launch, dict):
        return {"cwd": path.parent}
    name = f" {launch['name']!r}" if isinstance(launch.get("name"), str) else ""
    options: dict[str, Any] = {"cwd": Path(launch["cwd"]) if isinstance(launch.get("cwd"), str) else path.parent}
    launcher = launch.get("launcher")
    if launcher is not None:
        if (not isinstance(launcher, dict) or launcher.get("module") not in LAUNCHER_MODULES
                or not isinstance(launcher.get("args", []), list)):
            raise ProfileFailed(f"launch configuration{name}: its launcher must be one of "
                                f"{', '.join(LAUNCHER_MODULES)} with a list of arguments, got {launcher!r}",
                                errors.USAGE)
        options["launcher"] = (python, "-m", launcher["module"], *(str(a) for a in launcher.get("args", [])))
    if launch.get("module") in LAUNCHER_MODULES:  # the client sends a launcher it found the program under
        raise ProfileFailed(f"launch configuration{name} runs {launch['module']} without naming {path.name} among its "
                            "arguments: give the launcher as `launcher` ({module, args}) and the script as the program",
                            errors.USAGE)
    if isinstance(launch.get("module"), str) and launch["module"]:
        try:
            check_entry_module(launch["module"])
        except errors.UsageError as e:
            raise ProfileFailed(f"launch configuration{name}: {e}", errors.USAGE) from None
        options["entry_module"] = launch["module"]
    elif isinstance(launch.get("program"), str) and Path(launch["program"]) != path:
        options["entry_script"] = Path(launch["program"])
    if isinstance(launch.get("args"), list):
        options["args"] = tuple(str(a) for a in launch["args"])
    if isinstance(launch.get("env"), dict):
        options["env"] = {str(k): str(v) for k, v in launch["env"].items()}
    return options


def _record_in_history(root: Path, run_dir: Path) -> None:
    """The run's row in the workspace's history (the editor's runs view reads it); a history that
    cannot be written is logged, never the end of the run."""
    from ..history.index import record_run

    try:
        record_run(root, run_dir)
    except errors.StepscopeError as e:
        log.warning("the run was not recorded in the history: %s", e)


def _capture_and_analyse(req, progress: _Progress, output: _LogLines, cancel: threading.Event):
    from ..capture.runner import Cancelled, run_capture

    total = req.schedule.wait + req.schedule.warmup + req.schedule.active

    def on_event(event: protocol.Event) -> None:
        if isinstance(event, protocol.StepEvent):
            progress.report(f"step {event.index + 1}/{total} ({event.phase})", int(90 * (event.index + 1) / total))
        elif isinstance(event, protocol.WindowCompleteEvent):
            progress.report("window captured, analysing", 92)

    try:
        result = run_capture(req, output=output, on_event=on_event, cancel=cancel)
    except Cancelled as e:
        if e.run_dir is not None:
            _record_in_history(req.root, e.run_dir)
        raise ProfileFailed(str(e), e.exit_code) from None
    except errors.StepscopeError as e:
        raise ProfileFailed(str(e), e.exit_code) from None
    if not result.ok:
        _record_in_history(req.root, result.run_dir)
        raise ProfileFailed(f"{result.reason} (run folder {result.run_dir})", result.exit_code, str(result.run_dir))
    try:
        report = analysis_child.analyse(result.run_dir, cancel)
    except analysis_child.AnalysisCancelled as e:
        raise ProfileFailed(str(e), e.exit_code, str(result.run_dir)) from None
    except errors.StepscopeError as e:
        raise ProfileFailed(str(e), e.exit_code, str(result.run_dir)) from None
    jsonio.write_json(result.run_dir / protocol.REPORT, report, replace=False)
    _record_in_history(req.root, result.run_dir)
    return result, report


async def profile_at(ls: "StepscopeServer", args: dict[str, Any]) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    progress = _Progress(ls, args.get("workDoneToken"), loop)
    req = _build_request(ls, args)
    progress.begin("Stepscope: profiling the step")
    log.info("profiling %s:%d with %s", req.target_file, req.target_line, req.python)
    cancel = threading.Event()
    work = loop.run_in_executor(None, _capture_and_analyse, req, progress, _LogLines(ls, loop), cancel)
    try:
        while not work.done():
            if progress.cancelled():
                cancel.set()
            await asyncio.wait({work}, timeout=0.2)
        result, report = work.result()
    except asyncio.CancelledError:
        cancel.set()
        await asyncio.shield(asyncio.wait({work}, timeout=10))
        progress.end("cancelled")
        raise
    except ProfileFailed as e:
        progress.end(str(e))
        raise
    run = ls.runs.add(Path(result.run_dir), Path(req.root), report)
    open_texts = {uri: ls.workspace.get_text_document(uri).source for uri in run.uris()
                  if uri in ls.workspace.text_documents}
    for uri in ls.runs.show(run, open_texts):
        ls.documents.send(ls, uri)
    shown = {uri for uri in run.uris() if ls.runs.shown(uri, ls.roots()) is run}
    editor = results.profile_result(run, shown)
    if result.first_run:
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=FIRST_RUN_NOTICE))
    progress.end(editor["summary"])
    caps = ls.client_capabilities.workspace
    if caps and caps.inlay_hint and caps.inlay_hint.refresh_support:
        ls.workspace_inlay_hint_refresh(None)
    return editor
