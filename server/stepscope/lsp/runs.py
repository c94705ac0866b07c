"""The workspace's runs, by run id, and which run each document shows.

A run id is the name of the run's folder under `<root>/.stepscope/runs/`. Everything about a run
is read from its folder (status.json, spec.json, scenario.json, report.json, the report validated
against the report model), so runs made before a restart, or by the CLI, read the same as those
this server just made. One object (`RunRegistry`, the server's `runs`) owns this state.

Invariants:
- A document shows at most one run's figures and findings, and only while its text is the text the
  run measured: when a run is shown, the registry keeps a digest of each file it has figures for
  (the file on disk, which the program ran); any later text of that document that differs drops the
  document from the run. Saving or reopening the same text keeps it.
- A new run shown replaces the figures of every document (one run is on screen at a time).
- Reports held in memory are bounded (`MAX_REPORTS`, least recently used first out); a run shown by a
  document is read again from its folder when it was let go.
- A run id from a client is a folder name, never a path: anything else is refused.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .. import errors, jsonio, workspace
from ..agent import protocol
from ..analysis import model, present

MAX_REPORTS = 8
#: the version of the `stepscope/runs` answer (its own contract, beside the report's schema_version)
RUNS_SCHEMA_VERSION = 1
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_STAMP = re.compile(r"^(\d{8}T\d{6}Z)")


class UnknownRun(errors.UsageError):
    pass


def digest(text: str) -> str:
    """What a document's text is compared by (line endings do not count: the editor may change them)."""
    return hashlib.blake2b(text.replace("\r\n", "\n").encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


@dataclass
class Run:
    """A run read from its folder: its report, and its figures and findings per document URI."""
    run_id: str
    run_dir: Path
    root: Path
    report: dict[str, Any]
    lines: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict)  # uri → 0-based line → line
    findings: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # uri → findings on its lines

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
        self._shown: dict[str, str] = {}  # document uri → id of the run it shows
        self._measured: dict[str, str] = {}  # document uri → digest of the text its run measured
        self._roots: list[Path] = []  # workspace roots runs were made in (beside the workspace folders)
        self._summaries: dict[Path, tuple[tuple, dict[str, Any]]] = {}  # run folder → (file stamps, summary)

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
            "summary": None,
            "machine": None,
            "problem": None,
        }
        machine = (scenario or {}).get("machine")
        if isinstance(machine, dict):
            summary["machine"] = present.machine_label({"source": "scenario", **machine})
        if stamps[2] is not None:
            loaded = self._loaded.get(run_dir.name)
            try:  # read here, not held: listing many runs must not push out the ones on screen
                report = loaded.report if loaded is not None else model.load_report(run_dir / protocol.REPORT)
            except errors.StepscopeError as e:
                summary["problem"] = str(e)
            else:
                summary.update(analysed=True, msPerStep=report.get("ms_per_step"),
                               summary=present.run_summary(report),
                               machine=present.machine_label(report.get("machine")))
        self._summaries[run_dir] = (stamps, summary)
        return summary

    def report(self, run_id: Any, roots: Iterable[Path]) -> dict[str, Any]:
        """`stepscope/report`: the run's report, read from its folder and validated."""
        return self.load(run_id, roots).report

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
    def show(self, run: Run, open_texts: dict[str, str]) -> set[str]:
        """Show `run` in every document it has figures for, instead of whatever they showed. The text
        each measured is the file on disk; an open document whose text differs does not show it.
        Returns the documents whose figures or findings changed."""
        changed = set(self._shown) | run.uris()
        self._shown.clear()
        self._measured.clear()
        for uri in run.uris():
            text = _disk_text(uri)
            if text is None:
                continue
            self._measured[uri] = digest(text)
            if uri not in open_texts or digest(open_texts[uri]) == self._measured[uri]:
                self._shown[uri] = run.run_id
        return changed

    def text_is(self, uri: str, text: str) -> bool:
        """Tell the registry a document's current text; True when that drops the run it showed."""
        if uri not in self._shown or self._measured.get(uri) == digest(text):
            return False
        del self._shown[uri]
        return True

    def shown(self, uri: str, roots: Iterable[Path]) -> Run | None:
        run_id = self._shown.get(uri)
        if run_id is None:
            return None
        try:
            return self.load(run_id, roots)
        except errors.StepscopeError:
            del self._shown[uri]  # the run folder was deleted or its report spoiled meanwhile
            return None

    def line_at(self, uri: str, line: int, roots: Iterable[Path]) -> tuple[Run, dict[str, Any]] | None:
        run = self.shown(uri, roots)
        if run is None or line not in run.lines.get(uri, {}):
            return None
        return run, run.lines[uri][line]



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


def _disk_text(uri: str) -> str | None:
    from urllib.parse import unquote, urlparse

    try:
        return Path(unquote(urlparse(uri).path)).read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return None
