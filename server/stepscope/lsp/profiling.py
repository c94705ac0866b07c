"""The `stepscope.profile` command: position → step loop → capture → report → editor result.

The capture runs in a worker thread and the analysis in a child process (analysis_child.py); this
coroutine waits on them so that a `$/cancelRequest` (or the client cancelling the progress) stops
the program, or the analysis, promptly. Progress is reported to the client's work-done token when
it sent one, from the moment the program starts (its start-up before the first step included).
The run is then held by the run registry under its id, the text of the files it measured is kept in
its folder, and it is shown in those documents. A run that fails or is cancelled changes nothing on
screen but marks the figures of that script's last good run as from an earlier run; when its program
raised, the line of the user's code it raised on gets an error until the script's next good run
(`mark_raised`, runs.py).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from lsprotocol import types

from .. import errors, jsonio, workspace
from ..agent import protocol
from ..analysis import present
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
        self.run_id = Path(run_dir).name if run_dir else None


#: the start (wall clock, ns, as file times) of each profile in progress: a run folder made since the
#: earliest one, without a status.json yet, may be one of them (deleting it is refused)
_IN_PROGRESS: dict[int, int] = {}


def running_since() -> int | None:
    return min(_IN_PROGRESS.values()) if _IN_PROGRESS else None


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


def step_at(ls: "StepscopeServer", args: dict[str, Any]) -> dict[str, Any]:
    """`stepscope/resolveStep`: the step a profile at this position (or of the function named) would
    time, named for a title: a loop (`the loop at train.py:12 (for ...)`) or a function (`each call of
    LitModel.training_step (train.py:30)`, `function` set)."""
    path = path_of(str(args.get("uri", "")))
    if not path.is_file():
        raise ProfileFailed(f"{path.name} is not a saved file; save it before profiling", errors.USAGE)
    root = _root_for(ls, path)
    function = _function_arg(args)
    step_file, qualname, line = _step_function(path, function, root) if function else _step_at(path, args, root)
    try:
        header = step_file.read_text(encoding="utf-8", errors="replace").splitlines()[line - 1].strip()
    except (OSError, IndexError):
        header = ""
    if len(header) > 60:
        header = header[:59] + "…"
    if qualname is not None:
        title = f"each call of {qualname} ({step_file.name}:{line})"
    else:
        title = f"the loop at {step_file.name}:{line}" + (f" ({header})" if header else "")
    return {"uri": step_file.as_uri(), "line": line - 1, "file": step_file.name, "header": header,
            "function": qualname, "title": title}


def _build_request(ls: "StepscopeServer", args: dict[str, Any]):
    from ..agent.protocol import ProfileOptions
    from ..capture import options
    from ..capture.request import CaptureRequest, RunOptions

    program = step_program(ls, args)
    # The stepscope.profile.* settings: those sent with the command over those given at
    # initialisation. VS Code sends them with every command, read for the file's folder, so a
    # change applies to the next run without a restart; other editors may set them once.
    try:
        settings = options.merge_settings([("initializationOptions.profile", ls.options.get("profile")),
                                           ("the command's profile argument", args.get("profile")),
                                           # a finding's next check: this run's warm-up (next_checks.py)
                                           ("the command's warmup argument",
                                            {"warmup": args["warmup"]} if "warmup" in args else None)])
        profile, run = options.from_settings(settings, ProfileOptions, RunOptions)
    except options.SettingError as e:
        raise ProfileFailed(str(e), errors.USAGE) from None
    try:
        return CaptureRequest(**program, profile=profile, run=run)
    except errors.UsageError as e:  # a launcher and stepscope.profile.nproc > 1
        name = (args.get("launch") or {}).get("name")
        raise ProfileFailed(f"launch configuration {name!r}: {e} (set stepscope.profile.nproc to 1)", errors.USAGE) \
            from None


def step_program(ls: "StepscopeServer", args: dict[str, Any], verb: str = "profiling") -> dict[str, Any]:
    """The program and its step, as a command at `args` names them ({uri, position | function, python?,
    launch?}): the CaptureRequest's fields that Profile This Step and Measure This Step share."""
    path = path_of(str(args.get("uri", "")))
    if not path.is_file():
        raise ProfileFailed(f"{path.name} is not a saved file; save it before {verb}", errors.USAGE)
    python = args.get("python") or ls.options.get("interpreter") or sys.executable
    root = _root_for(ls, path)
    function = _function_arg(args)
    step_file, target_function, loop_line = _step_function(path, function, root, str(python)) if function \
        else _step_at(path, args, root)
    # the program starts from the file the command was given, also where the step lives elsewhere
    entry = path if step_file != path else None
    launch = _launch_options(args.get("launch"), path, str(python))
    if entry is not None and launch.get("entry_script") is None and launch.get("entry_module") is None:
        launch["entry_script"] = entry
    return {"root": root, "target_file": step_file, "target_line": loop_line, "target_function": target_function,
            "python": str(python), **launch}


def _shown(value: Any) -> str:
    from ..capture import options

    return options.shown(value)


def _function_arg(args: dict[str, Any]) -> str | None:
    """The command's `function` argument (a lens on a step function, or on a call that runs one), or None."""
    function = args.get("function")
    if function is not None and (not isinstance(function, str) or not function.strip()):
        raise ProfileFailed(f"the command's function argument must be a function's name, got {_shown(function)}",
                            errors.USAGE)
    return function.strip() if function else None


def _step_function(path: Path, name: str, root: Path, python: str | None = None) -> tuple[Path, str | None, int]:
    """(its file, qualified name, def line) of the function the command names (in the workspace, or
    a module of an installed package as `python` imports it): each call is a step."""
    from ..capture.step import resolve_function

    try:
        found = resolve_function(path, name, root, root, python)
    except errors.StepscopeError as e:
        raise ProfileFailed(str(e), e.exit_code) from None
    return found.file, found.qualname, found.line


def _step_at(path: Path, args: dict[str, Any], root: Path) -> tuple[Path, str | None, int]:
    """The step at the cursor, as (file, function's qualified name or None, line): the loop it is in;
    else the step function it is in (a `training_step`); else the step of the file, as
    `stepscope profile FILE` would choose it (the loop that is clearly the step, or its one step
    function)."""
    from ..capture.step import default_step, resolve_step
    from ..source.candidates import step_function_at

    position = args.get("position") or {}
    try:
        line = int(position.get("line", 0)) + 1
    except (TypeError, ValueError):
        raise ProfileFailed("position.line must be a number", errors.USAGE) from None
    try:
        return path, None, resolve_step(path, line)
    except errors.NoStepError as e:
        if e.kind not in ("not-in-loop", "in-function"):
            raise ProfileFailed(no_step_message(e), e.exit_code) from None
        in_function = e.kind == "in-function"
    except errors.StepscopeError as e:
        raise ProfileFailed(str(e), e.exit_code) from None
    if in_function:
        function = step_function_at(path.read_text(encoding="utf-8"), line)
        if function is not None and function.function:
            return _step_function(path, function.function, root)
    try:  # the cursor is in no step: the step of the file
        chosen = default_step(path, root, root)
    except errors.NoStepError as e2:
        raise ProfileFailed(no_step_message(e2), e2.exit_code) from None
    except errors.StepscopeError as e2:
        raise ProfileFailed(str(e2), e2.exit_code) from None
    if chosen.function is not None:
        return chosen.function.file, chosen.function.qualname, chosen.function.line
    return path, None, chosen.loop_line or 0


def _named(line: int, why: str, flag: str) -> str:
    """A candidate in the editor's words: `line 12 (for loop ...)`, `Lit.training_step (line 30: ...)`."""
    if flag.startswith("--function "):
        return f"{flag.removeprefix('--function ')} (line {line}: {why})"
    if flag.startswith("--line "):
        return f"line {line} ({why})"
    return f"{flag.split()[0]}:{line} ({why})"  # a loop of a module the file imports


def no_step_message(e: errors.NoStepError) -> str:
    """Why no step was profiled, in the editor's words (the CLI's name its flags)."""
    name = Path(e.file).name
    if e.kind == "ambiguous":
        listing = "; ".join(_named(*c) for c in e.candidates)
        return (f"the cursor is in no step, and more than one step in {name} could be the one: {listing}; "
                "put the cursor inside the loop or the step function to profile, or use its lens")
    if e.kind == "no-step":
        seen = "; ".join(_named(*c) for c in e.candidates[:20])
        return (f"the cursor is in no step, and no loop or function in {name} looks like a training or inference "
                "step" + (f" (seen: {seen})" if seen else "") + "; put the cursor inside the loop to profile")
    if e.kind == "not-in-loop":
        return f"line {e.line} of {name} is not inside a for/while loop; put the cursor inside the loop to profile"
    return str(e)


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


#: how often the progress says how long the program has been starting, before its first step
STARTUP_TICK_S = 1.0


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
    first_step = threading.Event()
    started = time.monotonic()
    program = req.target_file.name

    def startup_ticks() -> None:
        # A program spends seconds importing torch and building its data and model before the
        # loop: say so from the start, so the notification never sits silent.
        while not first_step.wait(STARTUP_TICK_S) and not cancel.is_set():
            progress.report(f"starting {program} (imports, data, model): {time.monotonic() - started:.0f} s", 1)

    def on_event(event: protocol.Event) -> None:
        if isinstance(event, protocol.StepEvent):
            first_step.set()
            progress.report(f"step {event.index + 1}/{total} ({event.phase})", int(90 * (event.index + 1) / total))
        elif isinstance(event, protocol.WindowCompleteEvent):
            progress.report("window captured, analysing", 92)

    progress.report(f"starting {program} (imports, data, model)", 0)
    ticker = threading.Thread(target=startup_ticks, name="stepscope-startup-progress", daemon=True)
    ticker.start()
    try:
        result = run_capture(req, output=output, on_event=on_event, cancel=cancel)
    except Cancelled as e:
        if e.run_dir is not None:
            _record_in_history(req.root, e.run_dir)
        raise ProfileFailed(str(e), e.exit_code) from None
    except errors.StepscopeError as e:
        raise ProfileFailed(str(e), e.exit_code) from None
    finally:
        first_step.set()
    if not result.ok:
        _record_in_history(req.root, result.run_dir)
        # the editor names the run, not its absolute folder (the log has that)
        raise ProfileFailed(str(result.reason), result.exit_code, str(result.run_dir))
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
    progress.begin(f"Stepscope: profiling the loop at {req.target_file.name}:{req.target_line}")
    log.info("profiling %s:%d with %s", req.target_file, req.target_line, req.python)
    cancel = threading.Event()
    key = id(cancel)
    _IN_PROGRESS[key] = time.time_ns()
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
        ls.figures_changed(ls.runs.failed(req.target_file, "it was cancelled"))
        raise
    except ProfileFailed as e:
        progress.end(str(e))
        if e.run_dir:
            log.info("the failed run's folder: %s", e.run_dir)
        ls.figures_changed(ls.runs.failed(req.target_file, present.for_surface(str(e), "editor")))
        mark_raised(ls, req.target_file, req.root, e, "profile")
        raise
    finally:
        _IN_PROGRESS.pop(key, None)
    ls.raised_changed(ls.runs.recovered(req.target_file))  # it ran well: where it raised before is no news
    run = ls.runs.add(Path(result.run_dir), Path(req.root), report)
    left_out = run.write_sources()
    if left_out:
        log.warning("%s changed while the run was going on: its figures are not shown", ", ".join(left_out))
    editor = show(ls, run)
    if result.first_run and not args.get("confirmed"):  # a client that asked the user before says so
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=FIRST_RUN_NOTICE))
    progress.end(editor["summary"])
    keep = args.get("keep")
    if isinstance(keep, int) and not isinstance(keep, bool) and keep > 0:
        deleted = ls.runs.prune([Path(req.root)], keep, {run.run_id})  # runs on screen are kept too
        if deleted:
            log.info("retention (keep %d runs): deleted %s", keep, ", ".join(deleted))
            editor["deleted"] = deleted
    return editor


def mark_raised(ls: "StepscopeServer", script: Path, root: Path, failure: ProfileFailed, kind: str) -> None:
    """A run of `script` failed: where its program raised is marked in the user's code (only for a
    program that failed, exit 3: a cancel or a time limit stops it wherever it was), replacing the
    script's earlier mark."""
    run_dir = Path(failure.run_dir) if failure.run_dir and failure.exit_code == errors.PROGRAM_FAILED else None
    ls.raised_changed(ls.runs.raised(script, run_dir, Path(root), kind))


def show(ls: "StepscopeServer", run) -> dict[str, Any]:
    """Show a run in the documents it has figures for; the editor's result for it."""
    open_texts = {uri: ls.workspace.get_text_document(uri).source for uri in run.uris() if ls.is_open(uri)}
    changed = ls.runs.show(run, open_texts)
    ls.figures_changed(changed)
    shown = ls.runs.showing(run.run_id)
    return results.profile_result(run, shown, ls.min_share())
