"""The Stepscope language server: diagnostics, code lenses, quick fixes, hovers, inlay hints,
"Profile this step", "Measure this step" (`stepscope.measure`, `stepscope/measure`: measuring.py), "Try this
fix (measure it)" (`stepscope.try`, `stepscope/tryChange`, `stepscope/applyTry`: trying.py), and the
runs of the workspace (`stepscope/runs`, `stepscope/report`,
`stepscope/figures`, `stepscope/showRun`, `stepscope/compareRuns`, `stepscope/deleteRun`, `stepscope/runLog`,
`stepscope/resolveStep`; docs/extension.md).

Handlers stay thin: rules come from `stepscope.rules`, loops from `stepscope.source`, captures
from `stepscope.capture`, reports from an analysis child process (analysis_child.py), their words
from `stepscope.analysis.present`. State has two owners: `documents` (the open documents' static
checks) and `runs` (the runs by id, and which run each document shows). Anything slow (a capture,
an analysis) runs in a worker thread or a child process; the event loop only waits on it, so a
cancel of the profile's progress (`window/workDoneProgress/cancel`, which the VS Code client sends
when the user cancels: pygls does not pass a `$/cancelRequest` on to a running command) stops the
program within a poll.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcServerError
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from .. import __version__, errors
from ..jsonio import plain
from ..analysis import present
from ..commands.runs import statement_comparison
from . import documents, measuring, next_checks, panel, profiling, results, share, trying
from .runs import RunRegistry

log = logging.getLogger("stepscope.lsp")

PROFILE_COMMAND = "stepscope.profile"
RUNS_REQUEST = "stepscope/runs"  # {} → {schemaVersion, runs: [run summary]}
REPORT_REQUEST = "stepscope/report"  # {runId} → the run's report (report.json, validated)
FIGURES_REQUEST = "stepscope/figures"  # {uri} → the document's figures on its current lines
SHOW_RUN_REQUEST = "stepscope/showRun"  # {runId} → shows it in its documents; the profile result
COMPARE_REQUEST = "stepscope/compareRuns"  # {a, b} → {markdown, statements} (or, with a measure run, {markdown, comparison})
DELETE_REQUEST = "stepscope/deleteRun"  # {runId} → {deleted}
RUN_LOG_REQUEST = "stepscope/runLog"  # {runId} → {runId, status, reason, raisedAt, log, logFile, truncated, text}
RESOLVE_STEP_REQUEST = "stepscope/resolveStep"  # {uri, position, function?} → the step a profile would time
FIGURES_CHANGED = "stepscope/figuresChanged"  # server → client: {uris}: ask for their figures again
# stepscope/timeline {runId, rank?, startUs?, endUs?, maxSpans?} → a timeline document (panel.py)
# stepscope/shareTrace {runId} → {runId, folder, copies: [{trace, copy, counts, occurrences}], summary} (share.py)
# stepscope/traceFiles {runId} → {runId, folder, traces: [{path, bytes}]} (share.py)


class StepscopeProtocol(LanguageServerProtocol):
    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params: types.ExecuteCommandParams):
        # pygls hands command handlers only the arguments; the client's progress token travels
        # in the ExecuteCommandParams, so carry it into the first argument.
        if params.work_done_token is not None and params.arguments and isinstance(params.arguments[0], dict):
            params.arguments[0].setdefault("workDoneToken", params.work_done_token)
        return (yield from super().lsp_workspace__execute_command(params))


def recorded_above(folders: list[Path]) -> list[Path]:
    """The roots above workspace folders where the CLI records their runs: run in a subfolder of a
    repository, `stepscope` records in the repository's `.stepscope/` (workspace.find_root), which a
    window opened on the subfolder would not otherwise see. Only where runs are there."""
    from ..workspace import RUNS_DIR, STATE_DIR, find_root

    above = []
    for folder in folders:
        folder, root = folder.resolve(), find_root(folder)
        if root in folder.parents and (root / STATE_DIR / RUNS_DIR).is_dir():
            above.append(root)
    return above


class StepscopeServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("stepscope", __version__, protocol_cls=StepscopeProtocol)
        self.options: dict[str, Any] = {}
        self.documents = documents.Documents()
        self.runs = RunRegistry()
        self.timelines = panel.Timelines()  # the trace panel's timelines (stepscope/timeline)

    def is_open(self, uri: str) -> bool:
        # pygls keeps open documents under their unquoted URI
        return unquote(uri) in self.workspace.text_documents

    def min_share(self) -> float:
        """Lines below this share of the step get no inline label (`initializationOptions.minShare`)."""
        value = self.options.get("minShare")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1:
            return float(value)
        return results.DEFAULT_MIN_SHARE

    def figures_changed(self, uris: set[str]) -> None:
        """Tell the client these documents' figures changed (new run, deleted run, failed run), and
        other editors to ask for their inlay hints again; republish their findings."""
        if not uris:
            return
        for uri in uris:
            if self.is_open(uri):
                self.documents.send(self, uri)
        self.protocol.notify(FIGURES_CHANGED, {"uris": sorted(uris)})
        caps = self.client_capabilities.workspace if self.client_capabilities else None
        if caps and caps.inlay_hint and caps.inlay_hint.refresh_support:
            self.workspace_inlay_hint_refresh(None)

    def raised_changed(self, uris: set[str]) -> None:
        """Republish the diagnostics of these documents, open or not: where a failed run raised in
        them was marked or unmarked."""
        for uri in uris:
            self.documents.send(self, uri)

    def roots(self) -> list[Path]:
        """Where runs live: the workspace folders, and any root a run of this session was made in."""
        folders = []
        for folder in self.workspace.folders.values():
            try:
                folders.append(profiling.path_of(folder.uri))
            except profiling.ProfileFailed:
                continue
        if not folders and self.workspace.root_path:
            folders.append(Path(self.workspace.root_path))
        return self.runs.roots([*folders, *recorded_above(folders)])


server = StepscopeServer()


@server.feature(types.INITIALIZE)
def initialize(ls: StepscopeServer, params: types.InitializeParams) -> None:
    opts = params.initialization_options
    ls.options = opts if isinstance(opts, dict) else {}


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: StepscopeServer, params: types.DidOpenTextDocumentParams) -> None:
    if ls.documents.publish(ls, params.text_document.uri, opened=True):
        ls.figures_changed({params.text_document.uri})


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: StepscopeServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.documents.publish(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: StepscopeServer, params: types.DidSaveTextDocumentParams) -> None:
    ls.documents.publish(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: StepscopeServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.documents.forget(ls, params.text_document.uri)
    if ls.runs.has_raised(params.text_document.uri):  # where a failed run raised stays in the Problems view
        ls.documents.send(ls, params.text_document.uri)
        return
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
)
def code_action(ls: StepscopeServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    return (ls.documents.code_actions(ls, uri, params.range)
            + trying.try_actions(ls, uri, params.context, params.range,
                                 _client_command(ls, "tryCommand", trying.TRY_COMMAND))
            + panel.finding_actions(ls, uri, params.context, ls.options.get("panelCommand"))
            + next_checks.next_check_actions(ls, uri, params.context,
                                             _client_command(ls, "profileCommand", PROFILE_COMMAND),
                                             _client_command(ls, "measureCommand", measuring.MEASURE_COMMAND)))


@server.feature(types.TEXT_DOCUMENT_CODE_LENS)
def code_lens(ls: StepscopeServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    # A client with its own commands names them (VS Code's ask for trust and confirmation first and
    # show progress); any other client's lenses run the server's commands, which it sends back as
    # workspace/executeCommand (Neovim's codelens.run does).
    return documents.step_lenses(ls, params.text_document.uri,
                                 _client_command(ls, "profileCommand", PROFILE_COMMAND),
                                 _client_command(ls, "measureCommand", measuring.MEASURE_COMMAND))


def _client_command(ls: StepscopeServer, option: str, server_command: str) -> str:
    named = ls.options.get(option)
    return named if isinstance(named, str) and named else server_command


@server.feature(types.TEXT_DOCUMENT_INLAY_HINT)
def inlay_hint(ls: StepscopeServer, params: types.InlayHintParams) -> list[types.InlayHint]:
    if ls.options.get("inlayHints") is False:  # VS Code paints decorations instead
        return []
    return documents.timing_hints(ls, params.text_document.uri, params.range, ls.min_share())


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: StepscopeServer, params: types.HoverParams) -> types.Hover | None:
    # a client that opens the trace panel on a line says so with initializationOptions.panelCommand
    panel = ls.options.get("panelCommand")
    return documents.timing_hover(ls, params.text_document.uri, params.position,
                                  panel if isinstance(panel, str) and panel else None)


@server.feature(RUNS_REQUEST)
def list_runs(ls: StepscopeServer, params: Any) -> dict[str, Any]:
    return ls.runs.list_runs(ls.roots())


def _param(params: Any, name: str) -> Any:
    """A field of a custom request's params, as plain JSON values (pygls hands unknown params over
    as named tuples)."""
    return plain(params.get(name) if isinstance(params, dict) else getattr(params, name, None))


@server.feature(share.SHARE_REQUEST)
async def share_trace(ls: StepscopeServer, params: Any) -> dict[str, Any]:
    try:
        run_dir = ls.runs.folder_of(_param(params, "runId"), ls.roots())
        return await asyncio.get_running_loop().run_in_executor(None, share.share_run, run_dir)
    except errors.StepscopeError as e:
        raise _refused(e) from None


@server.feature(share.TRACE_FILES_REQUEST)
def trace_files(ls: StepscopeServer, params: Any) -> dict[str, Any]:
    try:
        return share.trace_files(ls.runs.folder_of(_param(params, "runId"), ls.roots()))
    except errors.StepscopeError as e:
        raise _refused(e) from None


def _refused(e: errors.StepscopeError) -> JsonRpcServerError:
    return JsonRpcServerError(str(e), -32002, data={"exit": e.exit_code})


@server.feature(REPORT_REQUEST)
def run_report(ls: StepscopeServer, params: Any) -> dict[str, Any]:
    try:
        return ls.runs.report(_param(params, "runId"), ls.roots())
    except errors.StepscopeError as e:
        raise _refused(e) from None


@server.feature(FIGURES_REQUEST)
def document_figures(ls: StepscopeServer, params: Any) -> dict[str, Any]:
    uri = _param(params, "uri")
    if not isinstance(uri, str):
        raise JsonRpcInvalidParams("stepscope/figures expects {uri}")
    return documents.figures(ls, uri, ls.min_share())


@server.feature(SHOW_RUN_REQUEST)
def show_run(ls: StepscopeServer, params: Any) -> dict[str, Any]:
    """Show a run (made now, earlier, or by the CLI) in the documents it has figures for."""
    try:
        run = ls.runs.load(_param(params, "runId"), ls.roots())
    except errors.StepscopeError as e:
        raise _refused(e) from None
    return profiling.show(ls, run)


@server.feature(COMPARE_REQUEST)
def compare_runs(ls: StepscopeServer, params: Any) -> dict[str, Any]:
    """Two runs: statement by statement when both are profile runs (`statements`: the statements of
    `stepscope runs compare`, matched by their code through edits; the trace panel shows it); when a
    side is a measure run, the verdict of `stepscope runs compare` (a, the baseline; b, the candidate;
    `force` past a refusal)."""
    try:
        kinds = [ls.runs.kind_of(_param(params, key), ls.roots()) for key in ("a", "b")]
        if any(kind != "profile" for _, kind in kinds):  # a measure or a try run: their verdict
            (a_dir, a_kind), (b_dir, b_kind) = kinds
            return measuring.compare_markdown(a_dir.parent.parent.parent, (a_dir.name, a_kind), (b_dir.name, b_kind),
                                              force=_param(params, "force") is True)
        a = ls.runs.load(_param(params, "a"), ls.roots())
        b = ls.runs.load(_param(params, "b"), ls.roots())
        if a.run_id == b.run_id:
            raise errors.UsageError("compare takes two different runs")
        statements = statement_comparison((a.run_id, a.run_dir), (b.run_id, b.run_dir), a.root)
    except errors.StepscopeError as e:
        raise _refused(e) from None
    return {"markdown": present.compare_runs(statements, str(a.root)), "statements": statements}


@server.feature(measuring.MEASURE_REQUEST)
def measure_document(ls: StepscopeServer, params: Any) -> dict[str, Any]:
    try:
        return measuring.measure_document(ls, plain(params) if params is not None else {})
    except errors.StepscopeError as e:
        raise _refused(e) from None


@server.feature(DELETE_REQUEST)
def delete_run(ls: StepscopeServer, params: Any) -> dict[str, Any]:
    run_id = _param(params, "runId")
    try:
        gone = ls.runs.delete(run_id, ls.roots(), busy_since=profiling.running_since())
    except errors.StepscopeError as e:
        raise _refused(e) from None
    except OSError as e:
        raise JsonRpcServerError(f"could not delete run {run_id}: {e.strerror or e}", -32002) from None
    log.info("deleted run %s", run_id)
    ls.figures_changed(gone)
    return {"deleted": run_id}


@server.feature(RUN_LOG_REQUEST)
def run_log(ls: StepscopeServer, params: Any) -> dict[str, Any]:
    """How a run ended, where its program raised, and the end of its log (the runs view opens it
    for a failed run)."""
    try:
        return ls.runs.run_log(_param(params, "runId"), ls.roots(), busy_since=profiling.running_since())
    except errors.StepscopeError as e:
        raise _refused(e) from None


@server.feature(RESOLVE_STEP_REQUEST)
def resolve_step(ls: StepscopeServer, params: Any) -> dict[str, Any]:
    try:
        return profiling.step_at(ls, {"uri": _param(params, "uri"), "position": _param(params, "position"),
                                      "function": _param(params, "function")})
    except profiling.ProfileFailed as e:
        raise JsonRpcServerError(str(e), -32001, data={"exit": e.exit_code}) from None


@server.feature(panel.TIMELINE_REQUEST)
async def run_timeline(ls: StepscopeServer, params: Any) -> dict[str, Any]:
    try:
        return await ls.timelines.timeline(ls, plain(params) if params is not None else {})
    except errors.StepscopeError as e:
        raise _refused(e) from None


@server.feature(types.SHUTDOWN)
def shutdown(ls: StepscopeServer, params: Any) -> None:
    ls.timelines.stop()


async def _run_command(name: str, shape: str, arguments: tuple, run: Any) -> dict[str, Any]:
    """A command that runs the user's program (`run(argument)`): one object argument, and a failed
    run answered as an error with its one line and where its run folder is."""
    if not arguments or not isinstance(arguments[0], dict):
        raise JsonRpcInvalidParams(f"{name} expects one object: {shape}")
    try:
        return await run(arguments[0])
    except profiling.ProfileFailed as e:
        raise JsonRpcServerError(present.for_surface(str(e), "editor"), -32001,
                                 data={"exit": e.exit_code, "runDir": e.run_dir, "runId": e.run_id}) from None


@server.command(PROFILE_COMMAND)
async def profile(ls: StepscopeServer, *arguments: Any) -> dict[str, Any]:
    return await _run_command("stepscope.profile", "{uri, position, python?}", arguments,
                              lambda argument: profiling.profile_at(ls, argument))


@server.command(measuring.MEASURE_COMMAND)
async def measure(ls: StepscopeServer, *arguments: Any) -> dict[str, Any]:
    return await _run_command("stepscope.measure", "{uri, position, python?}", arguments,
                              lambda argument: measuring.measure_at(ls, argument))


@server.command(trying.TRY_COMMAND)
async def try_fix(ls: StepscopeServer, *arguments: Any) -> dict[str, Any]:
    return await _run_command("stepscope.try", "{uri, finding | fix | text, python?}", arguments,
                              lambda argument: trying.try_at(ls, argument))


@server.feature(trying.TRY_CHANGE_REQUEST)
def try_change(ls: StepscopeServer, params: Any) -> dict[str, Any]:
    try:
        return trying.change_document(ls, plain(params) if params is not None else {})
    except errors.StepscopeError as e:
        raise _refused(e) from None


@server.feature(trying.APPLY_REQUEST)
def apply_try(ls: StepscopeServer, params: Any) -> dict[str, Any]:
    try:
        return trying.apply_edit(ls, plain(params) if params is not None else {})
    except errors.StepscopeError as e:
        raise _refused(e) from None


class _ExpectedFailures(logging.Filter):
    """pygls logs every failed request with a traceback; a failed profile (the program crashed,
    the user cancelled) is an answer, not a server error, and its one line is already sent."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, (JsonRpcServerError, JsonRpcInvalidParams))


def start_stdio() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("pygls").setLevel(logging.WARNING)  # every message at INFO drowns the log
    for handler in logging.getLogger().handlers:
        handler.addFilter(_ExpectedFailures())
    server.start_io()
