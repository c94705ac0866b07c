"""The workspace's runs, by run id, and which run each document shows.

A run id is the name of the run's folder under `<root>/.stepscope/runs/`. Everything about a run
is read from its folder (status.json, spec.json, scenario.json, report.json, the report validated
against the report model), so runs made before a restart, or by the CLI, read the same as those
this server just made. One object (`RunRegistry`, the server's `runs`) owns this state.

Invariants:
- A document shows at most one run's figures and findings. The registry keeps, per document, the
  run it shows and the text that run measured (the run folder's `sources.json`, written when the
  editor's run ends; for a run made elsewhere, the file on disk when it has not changed since the run
  started): a figure or finding is shown on the line its code is on now (linemap.py), and hidden
  where that code changed. A text that measured nothing shows nothing of the run.
- A run shown in a document replaces what that document showed; other documents keep theirs. Which
  run each file shows is kept in `.stepscope/editor.json` of its workspace, so reopening the file or
  restarting the editor shows it again.
- A run that failed after a good one leaves the good one's figures on screen, marked: each document
  of the same script says which run its figures are from and that a later one failed.
- Reports held in memory are bounded (`MAX_REPORTS`, least recently used first out); a run shown by a
  document is read again from its folder when it was let go.
- A run whose program raised marks the line of the user's code it raised on (the innermost frame of
  its traceback in a workspace file, `tracebacks.py`) with its exception, one mark per script: the
  script's next failure replaces it, its next run that ends well (profile or measure) removes it.
  The mark follows its line through edits as figures do, and is hidden once that line's code changes.
- A run id from a client is a folder name, never a path: anything else is refused. Deleting a run
  removes only a folder directly inside a workspace's `.stepscope/runs/` (never a link).
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import re
import shutil
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable

from .. import errors, jsonio, workspace
from ..agent import protocol
from ..analysis import model, present
from ..source.linemap import LineMap
from . import tracebacks

log = logging.getLogger("stepscope.lsp")

MAX_REPORTS = 8
#: a run folder's copy of the source files its figures point at, as they were when it ran (the editor
#: writes it when its run ends): {"version": 1, "files": {"<workspace-relative path>": "<text>"}}
SOURCES = protocol.SOURCES
#: which run each file of a workspace shows: {"version": 1, "shown": {"<relative path>": "<run id>"}}
EDITOR_STATE = "editor.json"
#: how much of the end of a program's log is read for its traceback and shown in the runs view
LOG_TAIL_BYTES = 64 * 1024
#: the version of the `stepscope/runs` answer (its own contract, beside the report's schema_version)
RUNS_SCHEMA_VERSION = 1
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_STAMP = re.compile(r"^(\d{8}T\d{6}Z)")


class UnknownRun(errors.UsageError):
    pass


@dataclass
class Run:
    """A run read from its folder: its report, and its figures and findings per document URI."""
    run_id: str
    run_dir: Path
    root: Path
    report: dict[str, Any]
    lines: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict)  # uri → 0-based line → line
    findings: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # uri → findings on its lines
    _sources: dict[str, str] | None = None  # uri → the text it measured (sources.json), read once

    @classmethod
    def of(cls, run_id: str, run_dir: Path, root: Path, report: dict[str, Any]) -> "Run":
        run = cls(run_id, run_dir, root, report)
        for line in report.get("lines") or []:
            uri = in_workspace(line.get("file"), root)
            if uri is not None and isinstance(line.get("line"), int):
                run.lines.setdefault(uri, {}).setdefault(line["line"] - 1, line)
        for finding in report.get("findings") or []:
            uri = in_workspace(finding.get("file"), root)
            if uri is not None and finding.get("line"):
                run.findings.setdefault(uri, []).append(finding)
        return run

    def uris(self) -> set[str]:
        return set(self.lines) | set(self.findings)

    @property
    def started_ns(self) -> int | None:
        """When the program started, as a file time: spec.json is written just before it starts."""
        return workspace.run_started_ns(self.run_dir)

    @cached_property
    def script(self) -> Path | None:
        """The file whose step was profiled (spec.json's target)."""
        target = (_read_object(self.run_dir / protocol.SPEC) or {}).get("target")
        path = target.get("path") if isinstance(target, dict) else None
        return Path(path) if isinstance(path, str) else None

    def measured_text(self, uri: str) -> str | None:
        """The text of `uri` this run measured: from sources.json, else the file on disk when it has
        not changed since the run started; None when that cannot be known."""
        if self._sources is None:
            self._sources = {(self.root / rel).resolve().as_uri(): text
                             for rel, text in workspace.run_sources(self.run_dir).items()}
        if uri in self._sources:
            return self._sources[uri]
        return workspace.unchanged_text(_uri_path(uri), self.started_ns)  # None: changed since the run started

    def write_sources(self) -> list[str]:
        """Keep the text of each workspace file this run has figures for in its folder (sources.json),
        so its figures can follow their lines after edits, reopening and restarts. A file changed
        since the run started is left out (what ran is not known). Returns the files left out."""
        try:
            left_out = workspace.keep_sources(self.run_dir, self.root, [_uri_path(uri) for uri in self.uris()])
        except OSError as e:
            log.warning("could not keep the sources of run %s: %s", self.run_id, e)
            left_out = []
        self._sources = None
        return left_out


def in_workspace(file: Any, root: Path) -> str | None:
    """The URI of `file` when it lies inside the workspace root; the editor is never pointed elsewhere."""
    if not isinstance(file, str) or not file:
        return None
    path = Path(file).resolve()
    root = Path(root).resolve()
    if path != root and root not in path.parents:
        return None
    return path.as_uri()


class RunRegistry:
    def __init__(self) -> None:
        self._loaded: OrderedDict[str, Run] = OrderedDict()  # run id → run (least recently used first)
        self._folders: dict[str, Path] = {}  # run id → run folder, for every run seen
        self._views: dict[str, View] = {}  # document uri → the run it shows and where its lines are now
        self._failed: dict[str, tuple[str, str]] = {}  # script path → (when, reason) of its last failed run
        self._roots: list[Path] = []  # workspace roots runs were made in (beside the workspace folders)
        self._summaries: dict[Path, tuple[tuple, dict[str, Any]]] = {}  # run folder → (file stamps, summary)
        self._raised: dict[str, RaisedMark] = {}  # document uri → where a failed run's program raised in it

    # -- runs on disk -----------------------------------------------------------------------------
    def remember_root(self, root: Path) -> None:
        root = Path(root)
        if root not in self._roots:
            self._roots.append(root)

    def roots(self, folders: Iterable[Path]) -> list[Path]:
        out: list[Path] = []
        for root in [*folders, *self._roots]:
            if root not in out:
                out.append(root)
        return out

    def folder_of(self, run_id: Any, roots: Iterable[Path]) -> Path:
        if not isinstance(run_id, str) or not _RUN_ID.match(run_id) or ".." in run_id:
            raise UnknownRun(f"not a run id: {run_id!r} (the name of a folder in .stepscope/runs)")
        known = self._folders.get(run_id)
        if known is not None and known.is_dir():
            return known
        for root in roots:
            candidate = Path(root) / workspace.STATE_DIR / workspace.RUNS_DIR / run_id
            if candidate.is_dir():
                self._folders[run_id] = candidate
                return candidate
        raise UnknownRun(f"no run {run_id} in this workspace's .stepscope/runs")

    def kind_of(self, run_id: Any, roots: Iterable[Path]) -> tuple[Path, str]:
        """A run's folder and kind ("measure" or "profile", as its spec.json says; "try": a measure run
        of a change, with its try.json)."""
        run_dir = self.folder_of(run_id, roots)
        return run_dir, _kind(run_dir, _read_object(run_dir / protocol.SPEC))

    def list_runs(self, roots: Iterable[Path]) -> dict[str, Any]:
        """`stepscope/runs`: every run folder of the roots, newest first."""
        runs = []
        for root in roots:
            folder = Path(root) / workspace.STATE_DIR / workspace.RUNS_DIR
            if not folder.is_dir():
                continue
            for run_dir in folder.iterdir():
                if run_dir.is_dir() and _RUN_ID.match(run_dir.name):
                    self._folders.setdefault(run_dir.name, run_dir)
                    runs.append(self._summary(run_dir, Path(root)))
        runs.sort(key=lambda r: (r["started"] or "", r["id"]), reverse=True)
        return {"schemaVersion": RUNS_SCHEMA_VERSION, "runs": runs}

    def _summary(self, run_dir: Path, root: Path) -> dict[str, Any]:
        names = (protocol.STATUS, protocol.SPEC, protocol.REPORT, protocol.SCENARIO)
        stamps = tuple(_stamp(run_dir / n) for n in names)
        cached = self._summaries.get(run_dir)
        if cached is not None and cached[0] == stamps:
            return cached[1]
        status, spec, scenario = (_read_object(run_dir / n) for n in (protocol.STATUS, protocol.SPEC,
                                                                       protocol.SCENARIO))
        target = (spec or {}).get("target") if isinstance((spec or {}).get("target"), dict) else {}
        script = target.get("path") if isinstance(target.get("path"), str) else None
        summary: dict[str, Any] = {
            "id": run_dir.name,
            "kind": _kind(run_dir, spec),
            "folder": str(run_dir),
            "root": str(root),
            "started": _started(run_dir),
            "script": workspace.relpath(Path(script), root) if script else None,
            "stepLine": target.get("line") if isinstance(target.get("line"), int) else None,
            "stepFunction": target.get("function") if isinstance(target.get("function"), str) else None,
            # no status.json: still running, or stopped before it could say how it ended
            "status": str((status or {}).get("status") or "incomplete"),
            "reason": (status or {}).get("reason") if isinstance((status or {}).get("reason"), str) else None,
            "analysed": False,
            "msPerStep": None,
            "statusText": None,
            "summary": None,
            "machine": None,
            "problem": None,
        }
        machine = (scenario or {}).get("machine")
        if isinstance(machine, dict):
            summary["machine"] = present.machine_label({"source": "scenario", **machine})
        if (spec or {}).get("mode") == "measure":
            summary.update(_measure_summary(run_dir, root))
        elif stamps[2] is not None:
            loaded = self._loaded.get(run_dir.name)
            try:  # read here, not held: listing many runs must not push out the ones on screen
                report = loaded.report if loaded is not None else model.load_report(run_dir / protocol.REPORT)
            except errors.StepscopeError as e:
                summary["problem"] = str(e)
            else:
                summary.update(analysed=True, msPerStep=report.get("ms_per_step"),
                               statusText=present.status_text(report), summary=present.run_summary(report),
                               machine=present.machine_label(report.get("machine")))
        self._summaries[run_dir] = (stamps, summary)
        return summary

    def report(self, run_id: Any, roots: Iterable[Path]) -> dict[str, Any]:
        """`stepscope/report`: the run's report, read from its folder and validated, with the words of
        the profiler's distortion as the CLI and the status bar say them (`distortion_words`; the
        panel shows text only, and decides nothing about the figure)."""
        report = self.load(run_id, roots).report
        return {**report, "distortion_words": present.distortion_text(report)}

    def load(self, run_id: Any, roots: Iterable[Path]) -> Run:
        roots = list(roots)
        run_dir = self.folder_of(run_id, roots)
        run = self._loaded.get(run_dir.name)
        if run is not None:
            self._loaded.move_to_end(run.run_id)
            return run
        path = run_dir / protocol.REPORT
        if not path.is_file():
            status = _read_object(run_dir / protocol.STATUS) or {}
            why = f"it ended {status.get('status')}: {status.get('reason')}" if status.get("status") not in \
                (None, "complete") else "it was not analysed (`stepscope analyze` on its folder makes the report)"
            raise UnknownRun(f"run {run_dir.name} has no report: {why}")
        root = _root_of(run_dir)
        return self.add(run_dir, root, model.load_report(path))

    def add(self, run_dir: Path, root: Path, report: dict[str, Any]) -> Run:
        """Hold a run's report (just made, or just read)."""
        run = Run.of(run_dir.name, run_dir, root, report)
        self._folders[run.run_id] = run_dir
        self._loaded[run.run_id] = run
        self._loaded.move_to_end(run.run_id)
        while len(self._loaded) > MAX_REPORTS:
            self._loaded.popitem(last=False)
        self.remember_root(root)
        return run

    # -- what documents show ----------------------------------------------------------------------
    def show(self, run: Run, texts: dict[str, str]) -> set[str]:
        """Show `run` in every document it has figures or findings for, instead of what they showed.
        `texts` are the open documents' texts (others are read from disk). Returns the documents whose
        figures or findings changed."""
        changed = set()
        for uri in run.uris():
            measured = run.measured_text(uri)
            current = texts.get(uri)
            if current is None:
                current = _disk_text(uri)
            if measured is None or current is None:
                if self._views.pop(uri, None) is not None:
                    changed.add(uri)
                log.info("run %s: %s changed since the run started; its figures are not shown", run.run_id, uri)
                continue
            self._views[uri] = View(run.run_id, measured, LineMap.between(measured, current))
            changed.add(uri)
        self._failed.pop(str(run.script), None)  # a good run of the script: nothing is stale any more
        self._save_choices(run.root, {uri: run.run_id for uri in changed if uri in self._views})
        return changed

    def follow(self, uri: str, text: str) -> bool:
        """A document's text is now `text`: its run's figures move with their lines. True when the
        lines it shows changed."""
        uri = same_uri(uri)
        view = self._views.get(uri)
        if view is None:
            return False
        moved = LineMap.between(view.measured, text)
        if moved == view.lines:
            return False
        view.lines = moved
        return True

    def restore(self, uri: str, text: str, roots: Iterable[Path]) -> bool:
        """A document opened: show the run its file showed last (kept in editor.json), placed on the
        lines of `text`. True when it shows one now."""
        uri = same_uri(uri)
        if uri in self._views:
            self.follow(uri, text)
            return True
        path = _uri_path(uri)
        for root in roots:
            root = Path(root)
            if root != path and root not in path.parents:
                continue
            chosen = (_read_object(root / workspace.STATE_DIR / EDITOR_STATE) or {}).get("shown") or {}
            run_id = chosen.get(workspace.relpath(path, root)) if isinstance(chosen, dict) else None
            if not isinstance(run_id, str):
                continue
            try:
                run = self.load(run_id, [root])
            except errors.StepscopeError:
                continue  # deleted, or its report spoiled meanwhile
            measured = run.measured_text(uri) if uri in run.uris() else None
            if measured is None:
                continue
            self._views[uri] = View(run.run_id, measured, LineMap.between(measured, text))
            return True
        return False

    def forget(self, uri: str) -> None:
        """The document closed: its choice stays on disk, its view goes."""
        uri = same_uri(uri)
        self._views.pop(uri, None)

    def shown(self, uri: str, roots: Iterable[Path]) -> tuple[Run, "View"] | None:
        uri = same_uri(uri)
        view = self._views.get(uri)
        if view is None:
            return None
        try:
            return self.load(view.run_id, roots), view
        except errors.StepscopeError:
            del self._views[uri]  # the run folder was deleted or its report spoiled meanwhile
            return None

    def placed_lines(self, uri: str, roots: Iterable[Path]) -> tuple[Run, list[tuple[int, dict[str, Any]]], int] | None:
        """The run a document shows, its lines on the document's current lines (sorted), and how many
        of its lines are hidden because their code changed."""
        uri = same_uri(uri)
        found = self.shown(uri, roots)
        if found is None:
            return None
        run, view = found
        placed, hidden = [], 0
        for measured_line, line in sorted(run.lines.get(uri, {}).items()):
            now = view.lines.now(measured_line)
            if now is None:
                hidden += 1
            else:
                placed.append((now, line))
        return run, placed, hidden

    def placed_findings(self, uri: str, roots: Iterable[Path]) -> tuple[Run, list[tuple[int, dict[str, Any]]]] | None:
        """The findings of the run a document shows, on the lines their code is on now."""
        uri = same_uri(uri)
        found = self.shown(uri, roots)
        if found is None:
            return None
        run, view = found
        placed = []
        for finding in run.findings.get(uri, []):
            now = view.lines.now(int(finding["line"]) - 1)
            if now is not None:
                placed.append((now, finding))
        return run, placed

    def line_now(self, uri: str, line: int, roots: Iterable[Path]) -> int | None:
        """Where a 0-based line of the run a document shows is now (None: its code changed)."""
        found = self.shown(same_uri(uri), roots)
        return None if found is None else found[1].lines.now(line)

    def line_at(self, uri: str, line: int, roots: Iterable[Path]) -> tuple[Run, dict[str, Any]] | None:
        uri = same_uri(uri)
        found = self.shown(uri, roots)
        if found is None:
            return None
        run, view = found
        measured_line = view.lines.then(line)
        if measured_line is None or measured_line not in run.lines.get(uri, {}):
            return None
        return run, run.lines[uri][measured_line]

    def stale(self, run: Run) -> bool:
        """Whether a later run of the same script failed or was cancelled after `run`."""
        return str(run.script) in self._failed

    def notes(self, uri: str, run: Run) -> tuple[str, ...]:
        """What a reader of this document's figures should know: they are from an earlier run than
        one that failed; some of their lines changed since."""
        uri = same_uri(uri)
        out = []
        failed = self._failed.get(str(run.script))
        if failed is not None:
            out.append(f"These figures are from run {run.run_id}; the run of {failed[0]} failed: {failed[1]}")
        view = self._views.get(uri)
        if view is not None and not view.lines.identical:
            hidden = sum(1 for line in run.lines.get(uri, {}) if view.lines.now(line) is None)
            if hidden:
                out.append(f"{hidden} timed line{'s' if hidden != 1 else ''} changed since this run: "
                           "their figures are hidden until the next run")
        return tuple(out)

    def failed(self, script: Path, reason: str) -> set[str]:
        """A run of `script` failed or was cancelled: the documents showing an earlier run of it keep
        their figures, marked. Returns those documents."""
        when = _dt.datetime.now(_dt.timezone.utc).strftime("%H:%M UTC")
        self._failed[str(script)] = (when, reason)
        return {uri for uri, view in self._views.items()
                if (run := self._loaded.get(view.run_id)) is not None and str(run.script) == str(script)}

    def showing(self, run_id: str) -> set[str]:
        return {uri for uri, view in self._views.items() if view.run_id == run_id}

    def delete(self, run_id: Any, roots: Iterable[Path], busy_since: int | None = None) -> set[str]:
        """Delete a run folder (it must lie directly in a workspace's .stepscope/runs/ and not be a
        link); the documents that showed it show nothing. Returns those documents. A run that has not
        ended (no status.json) and started since `busy_since` (a profile in progress) is refused."""
        roots = list(roots)
        run_dir = self.folder_of(run_id, roots)
        started = _stamp(run_dir / protocol.SPEC)
        if busy_since is not None and not (run_dir / protocol.STATUS).exists() and \
                (started is None or started[0] >= busy_since):
            raise errors.UsageError(f"run {run_dir.name} is still running; cancel it before deleting it")
        if run_dir.is_symlink() or not any(run_dir.parent == (Path(r) / workspace.STATE_DIR / workspace.RUNS_DIR)
                                           and run_dir.parent.resolve() == run_dir.resolve().parent for r in roots):
            raise UnknownRun(f"{run_dir.name} is not a run folder of this workspace's .stepscope/runs")
        # As `stepscope runs delete` does: out of the folders' sight first (a dot name is no run
        # folder), then out of the history, then gone.
        doomed = run_dir.parent / f".deleting-{run_dir.name}"
        os.rename(run_dir, doomed)
        _forget_in_history(run_dir.parent.parent.parent, run_dir.name)
        shutil.rmtree(doomed)
        self._loaded.pop(run_dir.name, None)
        self._folders.pop(run_dir.name, None)
        self._summaries.pop(run_dir, None)
        gone = self.showing(run_dir.name)
        for uri in gone:
            del self._views[uri]
        for uri in [uri for uri, mark in self._raised.items() if mark.run_id == run_dir.name]:
            del self._raised[uri]
            gone.add(uri)
        return gone

    def prune(self, roots: Iterable[Path], keep: int, protect: set[str]) -> list[str]:
        """Keep the `keep` newest runs of each workspace (0: keep all): older ones are deleted, except
        runs on screen (`protect`, shown in a document) and runs without a status.json (one may still
        be running). Returns the ids deleted."""
        if keep <= 0:
            return []
        roots = list(roots)
        deleted = []
        for root in roots:
            runs = [r for r in self.list_runs([root])["runs"]]
            for summary in runs[keep:]:
                run_id = summary["id"]
                if run_id in protect or self.showing(run_id) or summary["status"] == "incomplete":
                    continue
                try:
                    self.delete(run_id, [root])
                except (errors.StepscopeError, OSError) as e:
                    log.warning("retention: run %s kept: %s", run_id, e)
                    continue
                deleted.append(run_id)
        return deleted

    # -- where a failed run raised ----------------------------------------------------------------
    def raised(self, script: Path, run_dir: Path | None, root: Path, kind: str) -> set[str]:
        """A run of `script` failed: mark where its program raised (when its log has a traceback
        through the user's code), in place of the script's earlier mark. Returns the documents whose
        marks changed."""
        changed = self.recovered(script)
        mark = raised_mark(run_dir, root, kind, str(script)) if run_dir is not None else None
        if mark is not None:
            self._raised[mark.uri] = mark
            changed.add(mark.uri)
        return changed

    def recovered(self, script: Path | None) -> set[str]:
        """A run of `script` ended well: its mark goes. Returns the documents that had it."""
        gone = {uri for uri, mark in self._raised.items() if mark.script == str(script)}
        for uri in gone:
            del self._raised[uri]
        return gone

    def has_raised(self, uri: str) -> bool:
        return same_uri(uri) in self._raised

    def raised_at(self, uri: str, text: str) -> tuple[int, "RaisedMark"] | None:
        """The mark of a failed run in this document, on the line its code is on in `text` (0-based);
        None when there is none or that code changed."""
        mark = self._raised.get(same_uri(uri))
        if mark is None:
            return None
        now = LineMap.between(mark.text, text).now(mark.line)
        return (now, mark) if now is not None else None

    def run_log(self, run_id: Any, roots: Iterable[Path], busy_since: int | None = None) -> dict[str, Any]:
        """`stepscope/runLog`: how a run ended and the end of its program's log. A run that has not
        ended (no status.json) and started since `busy_since` (a run in progress) is refused."""
        run_dir = self.folder_of(run_id, roots)
        status = _read_object(run_dir / protocol.STATUS)
        if status is None:
            started = _stamp(run_dir / protocol.SPEC)
            if busy_since is not None and (started is None or started[0] >= busy_since):
                raise errors.UsageError(f"run {run_dir.name} is still running: its log is complete once it ends")
        log_path = program_log(run_dir)
        text, cut = read_tail(log_path) if log_path is not None else ("", False)
        state = str((status or {}).get("status") or "incomplete")
        reason = status.get("reason") if isinstance((status or {}).get("reason"), str) else None
        root = _root_of(run_dir)
        mark = raised_mark(run_dir, root, _kind(run_dir, _read_object(run_dir / protocol.SPEC)), "")
        raised_at = None if mark is None else {"uri": mark.uri, "line": mark.line,
                                               "file": workspace.relpath(_uri_path(mark.uri), root),
                                               "exception": mark.exception, "message": mark.message}
        return {"runId": run_dir.name, "status": state, "reason": reason, "raisedAt": raised_at,
                "log": text, "logFile": log_path.name if log_path is not None else None, "truncated": cut,
                "text": present_log(run_dir.name, state, reason, raised_at, log_path, text, cut)}

    def _save_choices(self, root: Path, chosen: dict[str, str]) -> None:
        """Remember which run these documents show (editor.json of the workspace)."""
        if not chosen:
            return
        path = Path(root) / workspace.STATE_DIR / EDITOR_STATE
        doc = _read_object(path) or {}
        shown = doc.get("shown") if isinstance(doc.get("shown"), dict) else {}
        for uri, run_id in chosen.items():
            shown[workspace.relpath(_uri_path(uri), root)] = run_id
        try:
            workspace.state_dir(root)
            jsonio.write_json(path, {"version": 1, "shown": shown})
        except OSError as e:
            log.warning("could not remember the runs shown (%s): %s", path, e)


@dataclass(frozen=True)
class RaisedMark:
    """Where a failed run's program raised, in one workspace file."""
    run_id: str
    script: str  # the script whose run failed (its next good run removes the mark)
    uri: str
    line: int  # 0-based, in `text`
    exception: str  # `RuntimeError: ...`, as the traceback ends
    message: str
    text: str  # the file's text as the run ran it


def program_log(run_dir: Path) -> Path | None:
    """The run's program log (program.log; of a run of several processes, the one written last:
    the process that failed), or None."""
    logs = [p for p in run_dir.glob("program*.log")
            if p.is_file() and protocol.parse_run_file_name(p.name).name == protocol.PROGRAM_LOG]
    if not logs:
        return None
    return max(logs, key=lambda p: (p.stat().st_mtime_ns, p.name))


def read_tail(path: Path, limit: int = LOG_TAIL_BYTES) -> tuple[str, bool]:
    """The last `limit` bytes of a log, from its first whole line, and whether it was cut."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - limit))
            data = f.read()
    except OSError:
        return "", False
    cut = size > limit
    if cut:
        data = data[data.find(b"\n") + 1:] if b"\n" in data else data
    return data.decode("utf-8", errors="replace"), cut


def raised_mark(run_dir: Path, root: Path, kind: str, script: str) -> RaisedMark | None:
    """Where the run's program raised in the user's code: the innermost frame of the last traceback
    of its log in a workspace file (tracebacks.py checks the path lies in the workspace), when that
    file has not changed since the run started and its line is the one the traceback printed."""
    log_path = program_log(run_dir)
    if log_path is None:
        return None
    raised = tracebacks.last_traceback(read_tail(log_path)[0])
    frame = tracebacks.users_frame(raised, root) if raised is not None else None
    if frame is None:
        return None
    path = Path(frame.file).resolve()
    text = workspace.unchanged_text(path, workspace.run_started_ns(run_dir))
    lines = text.splitlines() if text is not None else []
    if not 0 < frame.line <= len(lines) or (frame.code and lines[frame.line - 1].strip() != frame.code):
        return None  # changed since the run started: where it raised is not known any more
    verb = "measured" if kind in ("measure", "try") else "profiled"
    return RaisedMark(run_dir.name, script, path.as_uri(), frame.line - 1, raised.exception,
                      f"the {verb} run failed here: {raised.exception}", text or "")


def present_log(run_id: str, status: str, reason: str | None, raised_at: dict[str, Any] | None,
                log_path: Path | None, text: str, cut: bool) -> str:
    """The runs view's document of a run's log: how it ended and where it raised, then the log."""
    head = [f"Run {run_id}: {status}" + (f": {reason}" if reason else "")]
    if raised_at is not None:
        head.append(f"Raised at {raised_at['file']}:{raised_at['line'] + 1}: {raised_at['exception']}")
    if log_path is None:
        return "\n".join([*head, "(the run has no program log)", ""])
    head.append(f"--- {log_path.name}" + (f" (its last {LOG_TAIL_BYTES // 1024} KiB)" if cut else "") + " ---")
    return "\n".join(head) + "\n" + text + ("" if text.endswith("\n") or not text else "\n")


@dataclass
class View:
    """What one document shows of a run: the run, the text it measured, and where those lines are now."""
    run_id: str
    measured: str
    lines: LineMap


def _kind(run_dir: Path, spec: dict[str, Any] | None) -> str:
    if (spec or {}).get("mode") != "measure":
        return "profile"
    return "try" if (run_dir / protocol.TRY).is_file() else "measure"


def _measure_summary(run_dir: Path, root: Path) -> dict[str, Any]:
    """A measure run (steps timed without the profiler, no report) as `stepscope runs list` words
    it: its median ms/step and spread, or how it ended."""
    from ..history.index import rows_for
    from ..measurement import present as measure_present

    rows = rows_for(run_dir, root)
    if rows is None:
        return {}
    row = rows.run
    return {"msPerStep": row.get("ms_per_step"), "statusText": measure_present.run_summary(row)}


def _forget_in_history(root: Path, run_id: str) -> None:
    """The run's row out of the workspace's history, when there is one (a history that cannot be
    written is logged: `stepscope runs rebuild` reads the folders again)."""
    from ..history.store import History, db_path

    if not db_path(root).is_file():
        return
    try:
        with History.open(root) as history:
            history.delete(run_id)
    except errors.StepscopeError as e:
        log.warning("run %s was deleted but is still in the history: %s", run_id, e)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _read_object(path: Path) -> dict[str, Any] | None:
    try:
        doc = jsonio.read_json(path)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _started(run_dir: Path) -> str | None:
    """When the run started (UTC, ISO 8601): from its folder's name, else the folder's own time."""
    match = _STAMP.match(run_dir.name)
    if match:
        when = _dt.datetime.strptime(match.group(1), "%Y%m%dT%H%M%SZ").replace(tzinfo=_dt.timezone.utc)
    else:
        try:
            when = _dt.datetime.fromtimestamp(run_dir.stat().st_mtime, _dt.timezone.utc)
        except OSError:
            return None
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _root_of(run_dir: Path) -> Path:
    """The workspace root a run folder belongs to: the folder holding its `.stepscope`."""
    table = _read_object(run_dir / protocol.FILES)
    if table and isinstance(table.get("root"), str) and Path(table["root"]).is_absolute():
        return Path(table["root"])
    return run_dir.parent.parent.parent


def same_uri(uri: str) -> str:
    """One spelling of a file's URI (Python's), whatever escapes the client used."""
    if not uri.startswith("file:"):
        return uri
    return _uri_path(uri).as_uri()


def _uri_path(uri: str) -> Path:
    from urllib.parse import unquote, urlparse

    return Path(unquote(urlparse(uri).path))


def _disk_text(uri: str) -> str | None:
    try:
        return _uri_path(uri).read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return None
