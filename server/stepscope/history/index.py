"""What a run folder says, as rows of the history; recording one run; rebuilding them all.

`rows_for(run_dir)` is a pure read of the folder's files (spec.json, status.json, scenario.json,
files.json, and report.json for a profile run or measure.json for a measure run; a measure run with
a try.json is a try, kind "try", with a measure run's columns and passes): the same folder
always gives the same rows, so `record_run` (right after a run) and `rebuild` (any time later)
agree. A folder without spec.json is not a run folder; a run folder without status.json is a run
that is still going or whose process was killed (status "incomplete").
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from pathlib import Path
from typing import Any

from .. import jsonio, workspace
from ..agent import protocol
from ..measurement.scope import scope_of
from ..measurement.stats import overlapping_middles
from .store import History, Pass, RunRows

_STAMP = re.compile(r"(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z")


def _read(path: Path) -> Any:
    try:
        return jsonio.read_json(path)
    except (OSError, ValueError):
        return None


def _started(run_dir: Path) -> str | None:
    match = _STAMP.match(run_dir.name)
    if match:
        y, mo, d, h, mi, s = match.groups()
        return f"{y}-{mo}-{d}T{h}:{mi}:{s}Z"
    try:
        mtime = (run_dir / protocol.SPEC).stat().st_mtime
    except OSError:
        return None
    return _dt.datetime.fromtimestamp(mtime, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def folder_ref(run_dir: Path, root: Path) -> str:
    """How the history names a run's folder: relative to `.stepscope/` when it is inside (so a
    moved workspace keeps its history), absolute otherwise (`--out`)."""
    state = (Path(root) / workspace.STATE_DIR).resolve()
    run_dir = Path(run_dir).resolve()
    try:
        return run_dir.relative_to(state).as_posix()
    except ValueError:
        return str(run_dir)


def folder_path(folder: str, root: Path) -> Path:
    """The inverse of `folder_ref`."""
    path = Path(folder)
    return path if path.is_absolute() else Path(root) / workspace.STATE_DIR / path


def _script(step_file: str | None, root: str | None) -> str | None:
    if not step_file:
        return None
    if root:
        try:
            return Path(os.path.relpath(step_file, root)).as_posix()
        except ValueError:
            pass
    return Path(step_file).as_posix()


def rows_for(run_dir: Path, root: Path) -> RunRows | None:
    """The history rows of the run folder `run_dir` (None: not a run folder)."""
    run_dir = Path(run_dir)
    spec = _read(run_dir / protocol.SPEC)
    if not isinstance(spec, dict):
        return None
    status = _read(run_dir / protocol.STATUS)
    status = status if isinstance(status, dict) else {}
    measured = _read(run_dir / protocol.MEASURE)
    kind = "measure" if isinstance(measured, dict) or spec.get("mode") == "measure" else "profile"
    if kind == "measure" and (run_dir / protocol.TRY).is_file():
        kind = "try"  # a change measured against the workspace as it is (`stepscope try`)
    scenario = _read(run_dir / protocol.SCENARIO)
    scenario = scenario if isinstance(scenario, dict) else spec.get("scenario") or {}
    files = _read(run_dir / protocol.FILES)
    ws_root = (files or {}).get("root") if isinstance(files, dict) else None
    step = scenario.get("step") or {}
    git = scenario.get("git") or {}
    machine = scenario.get("machine") or {}
    run: dict[str, Any] = {
        "id": run_dir.name, "folder": folder_ref(run_dir, root), "kind": kind, "started_utc": _started(run_dir),
        "status": status.get("status", "incomplete"), "exit": status.get("exit"), "reason": status.get("reason"),
        "script": _script(step.get("file"), ws_root), "step_line": step.get("line"),
        "step_function": step.get("function"), "git_commit": git.get("commit"), "git_dirty": git.get("dirty"),
        "note": scenario.get("note"), "batch_size": scenario.get("batch_size"),
    }
    passes: list[Pass] = []
    if kind in ("measure", "try"):
        if isinstance(measured, dict):
            machine = measured.get("machine") or machine
            scope = measured.get("scope") or {}
            run.update(_measure_columns(measured))
            run["script"] = scope.get("script", run["script"])
            run["batch_size"] = scope.get("batch_size", run["batch_size"])
            run["scope"] = scope
            passes = _measure_passes(measured)
    else:
        report = _read(run_dir / protocol.REPORT)
        if isinstance(report, dict):
            run.update(_profile_columns(report))
            passes = _profile_passes(report)
            warmup = ((report.get("unprofiled") or {}).get("warmup_passes"))
            run["scope"] = scope_of(scenario, kind="profile", script=run["script"], warmup=warmup)
    if machine:
        run.update(host=machine.get("host"), device=machine.get("device"), torch=machine.get("torch"),
                   machine=machine)
    return RunRows(run, passes)


_FIGURES = ("iqr_ms", "p10_ms", "p90_ms", "min_ms", "max_ms", "samples_per_s", "noisy")


def _measure_columns(m: dict) -> dict[str, Any]:
    out: dict[str, Any] = {k: m.get(k) for k in _FIGURES}
    out["ms_per_step"] = m.get("median_ms")
    out["passes"] = len(m.get("raw_ms") or [])
    out["processes"] = len(m.get("runs") or []) or None
    baseline = m.get("baseline") or {}
    ci = m.get("ci95") or [None, None]
    out.update(baseline=baseline.get("run"), interleaved=baseline.get("interleaved"), ratio=m.get("ratio"), ci_low=ci[0], ci_high=ci[1],
               verdict=m.get("verdict"), values_match=m.get("values_match"),
               margin=m.get("margin", (m.get("method") or {}).get("margin")))
    return out


def _measure_passes(m: dict) -> list[Pass]:
    passes: list[Pass] = []
    for process, run in enumerate(m.get("runs") or []):
        values = run.get("values") or []
        for i, ms in enumerate(run.get("warmup_ms") or []):
            passes.append(Pass(process, "warmup", i, ms))
        for i, ms in enumerate(run.get("raw_ms") or []):
            passes.append(Pass(process, "measured", i, ms, values[i] if i < len(values) else None))
    return passes


def _profile_columns(r: dict) -> dict[str, Any]:
    unprofiled = r.get("unprofiled") or {}
    steps = [s["ms"] for s in r.get("steps") or [] if isinstance(s, dict) and isinstance(s.get("ms"), (int, float))]
    after = [ms for ms in unprofiled.get("raw_ms") or [] if isinstance(ms, (int, float))]
    overlaps = None if r.get("distortion") is None else overlapping_middles(steps, after) is not None
    return {"ms_per_step": r.get("ms_per_step"), "samples_per_s": r.get("samples_per_s"),
            "passes": len(r.get("steps") or []), "processes": 1,
            "unprofiled_ms": unprofiled.get("ms_per_step"), "distortion": r.get("distortion"),
            "distortion_overlaps": overlaps}


def _profile_passes(r: dict) -> list[Pass]:
    passes = [Pass(0, "profiled", i, s["ms"]) for i, s in enumerate(r.get("steps") or [])
              if isinstance(s, dict) and isinstance(s.get("ms"), (int, float))]
    unprofiled = r.get("unprofiled") or {}
    passes += [Pass(0, "unprofiled-warmup", i, ms) for i, ms in enumerate(unprofiled.get("warmup_ms") or [])]
    passes += [Pass(0, "unprofiled", i, ms) for i, ms in enumerate(unprofiled.get("raw_ms") or [])]
    return passes


def record_run(root: Path, run_dir: Path) -> None:
    """Write the rows of one finished run (its folder complete) into the workspace's history."""
    rows = rows_for(run_dir, root)
    if rows is None:
        return
    with History.open(root) as history:
        history.write(rows)


def run_folders(root: Path) -> list[Path]:
    runs = Path(root) / workspace.STATE_DIR / workspace.RUNS_DIR
    if not runs.is_dir():
        return []
    return sorted(p for p in runs.iterdir() if p.is_dir() and not p.name.startswith("."))


def rebuild(root: Path) -> int:
    """Index every run folder of the workspace again; the history then holds exactly them (and
    the runs kept outside `.stepscope/` with `--out` whose folders still exist). Returns the count."""
    all_rows = [rows for rows in (rows_for(d, root) for d in run_folders(root)) if rows is not None]
    with History.open(root) as history:
        keep = {r["id"] for r in history.runs()
                if Path(r["folder"]).is_absolute() and (Path(r["folder"]) / protocol.SPEC).exists()}
        history.replace_all(all_rows, keep=keep - {rows.run["id"] for rows in all_rows})
    return len(all_rows)
