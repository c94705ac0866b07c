"""`stepscope runs [list | show RUN | compare RUN RUN | delete RUN | rebuild]`: the history of runs.

The history (`.stepscope/stepscope.db`) indexes the run folders; when it is missing but run folders
exist, it is rebuilt from them first. A run is named by its folder's name, any part of that name
only it has, or its folder's path. `delete` removes the run's row and its folder, and never
anything outside `.stepscope/`: a run kept elsewhere with `--out` loses its row only.

`compare` gives the verdict of the runs' timed passes (measurement.compare); of two profile runs,
also every statement's wall time per step in both (`statements`, analysis/run_compare.py), matched
by its code through the text each run measured (its sources.json, else the file when unchanged
since the run): the JSON's `lines`. Two profile runs without steps timed outside the profiler still
get their statements, with the reason there is no verdict (`no_verdict`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from .. import errors

ACTIONS = ("list", "show", "compare", "delete", "rebuild")
_REFS = {"list": 0, "show": 1, "compare": 2, "delete": 1, "rebuild": 0}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", nargs="?", default="list", choices=ACTIONS,
                   help="list (default), show RUN, compare BASELINE CANDIDATE, delete RUN, rebuild")
    p.add_argument("runs", nargs="*", metavar="RUN", help="a run: its name, a part of it, or its folder")
    p.add_argument("--root", help="the workspace (default: the one holding the current folder)")
    p.add_argument("--kind", choices=("profile", "measure", "try"), help="list: only runs of this kind")
    p.add_argument("--limit", type=int, help="list: at most this many runs, newest first")
    p.add_argument("--tolerance", type=float, help="compare: relative difference allowed between the runs' "
                                                   "values (default 1e-4)")
    p.add_argument("--force", action="store_true", help="compare: compare runs that differ in machine or scope")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def run(args: argparse.Namespace) -> int:
    from ..workspace import find_root

    wanted = _REFS[args.action]
    if len(args.runs) != wanted:
        raise errors.UsageError(f"`runs {args.action}` takes {wanted or 'no'} run{'s' if wanted != 1 else ''} "
                                f"(got {len(args.runs)})")
    if args.limit is not None and args.limit < 1:
        raise errors.UsageError(f"--limit must be a whole number >= 1 (got {args.limit})")
    root = Path(args.root).resolve() if args.root else find_root(Path.cwd())
    if not root.is_dir():
        raise errors.UsageError(f"no such folder: {args.root}")
    if args.action == "rebuild":
        return _rebuild(root, args)
    if args.action == "list" and _nothing_recorded(root):  # a listing never creates a history
        from ..history.store import db_path
        from ..measurement.present import runs_table

        _emit(args, {"history": str(db_path(root)), "runs": []}, runs_table([]))
        return errors.OK
    history = _open(root)
    try:
        return {"list": _list, "show": _show, "compare": _compare, "delete": _delete}[args.action](
            history, root, args)
    finally:
        history.close()


def _nothing_recorded(root: Path) -> bool:
    from ..history import index
    from ..history.store import db_path

    return not db_path(root).exists() and not index.run_folders(root)


def _open(root: Path):
    from ..history import index
    from ..history.store import History, db_path

    if not db_path(root).exists() and index.run_folders(root):
        count = index.rebuild(root)
        sys.stderr.write(f"stepscope: note: no run history yet; indexed {count} run folder(s) of {root}\n")
    return History.open(root)


def _emit(args: argparse.Namespace, doc: Any, text: str) -> None:
    if args.json:
        from ..jsonio import dumps

        sys.stdout.buffer.write(dumps(doc) + b"\n")
    else:
        sys.stdout.write(text)


def _with_run_dir(row: dict[str, Any], root: Path) -> dict[str, Any]:
    from ..history.index import folder_path

    out = dict(row)
    out["run_dir"] = str(folder_path(out.pop("folder"), root).resolve())
    return out


def _list(history, root: Path, args: argparse.Namespace) -> int:
    from ..measurement.present import runs_table

    rows = history.runs(kind=args.kind, limit=args.limit)
    _emit(args, {"history": str(history.path), "runs": [_with_run_dir(r, root) for r in rows]}, runs_table(rows))
    return errors.OK


def _show(history, root: Path, args: argparse.Namespace) -> int:
    from ..history.store import iter_phase
    from ..measurement.present import machine_label, run_summary, step_label, verdict_words

    run_id = history.resolve(args.runs[0])
    row = _with_run_dir(history.get(run_id), root)
    passes = history.passes(run_id)
    phases: dict[str, Any] = {}
    for phase in sorted({p.phase for p in passes}):
        groups = list(iter_phase(passes, phase))
        phases[phase] = {"ms": [[p.ms for p in g] for g in groups],
                         "values": [[p.value for p in g] for g in groups]
                         if any(p.value is not None for g in groups for p in g) else None}
    lines = [f"{row['id']}  ({row['kind']}, {row['status']})",
             f"  step     {step_label(row.get('script'), row.get('step_line'), row.get('step_function'))}",
             f"  result   {run_summary(row)}",
             f"  machine  {machine_label(row.get('machine'))}"]
    if row.get("git_commit"):
        lines.append(f"  code     commit {row['git_commit'][:12]}{' with uncommitted changes' if row.get('git_dirty') else ''}")
    if row.get("baseline"):
        lines.append(f"  against  {row['baseline']}{' (interleaved)' if row.get('interleaved') else ''}: "
                     f"{verdict_words(row)}, values {'match' if row.get('values_match') else 'differ' if row.get('values_match') is False else 'not compared'}")
    if row.get("kind") == "try":
        from .try_ import recorded_change

        try:
            _, change, _ = recorded_change(Path(row["run_dir"]))
            how = (f"`stepscope try {row['id']} --apply` writes it" if change.applicable
                   else "an experiment, never applied")
            lines.append(f"  change   {change.title} ({change.stats()['added']} added, {change.stats()['removed']} "
                         f"removed; {how})")
        except errors.StepscopeError as e:
            lines.append(f"  change   {e}")
    for phase, data in phases.items():
        flat = [v for g in data["ms"] for v in g]
        lines.append(f"  {phase:<8} {len(flat)} value(s): " + ", ".join(f"{v:.3g}" for v in flat[:12])
                     + (" ..." if len(flat) > 12 else ""))
    if row.get("reason"):
        lines.append(f"  reason   {row['reason']}")
    lines.append(f"  folder   {row['run_dir']}")
    _emit(args, {"run": row, "passes": phases}, "\n".join(lines) + "\n")
    return errors.OK


def _compare(history, root: Path, args: argparse.Namespace) -> int:
    from ..history.index import folder_path
    from ..measurement.compare import NotComparable
    from ..measurement.present import comparison_text

    baseline_id, candidate_id = (history.resolve(r) for r in args.runs)
    if args.tolerance is not None and not args.tolerance >= 0:
        raise errors.UsageError(f"--tolerance must be a number >= 0 (got {args.tolerance})")
    rows = [history.get(run_id) or {} for run_id in (baseline_id, candidate_id)]
    profiles = all(row.get("kind") == "profile" for row in rows) and baseline_id != candidate_id
    statements = statement_comparison(*((run_id, folder_path(row["folder"], root)) for run_id, row in
                                        zip((baseline_id, candidate_id), rows)), root) if profiles else None
    try:
        doc = history.compare(baseline_id, candidate_id, tolerance=args.tolerance, force=args.force)
    except NotComparable as e:
        raise errors.StepscopeError(f"the runs are not comparable, they differ in {e}; use --force to compare "
                                    "them anyway", errors.REFUSED) from None
    except errors.UsageError as e:
        if statements is None:
            raise
        doc = {"no_verdict": str(e)}  # two profile runs: their statements compare without a verdict
    text = comparison_text(doc) if "no_verdict" not in doc else f"no verdict: {doc['no_verdict']}\n"
    if statements is not None:
        from ..analysis.present import compare_runs_text

        doc = {**doc, "statements": {k: v for k, v in statements.items() if k != "lines"},
               "lines": statements["lines"]}
        text += "\n" + compare_runs_text(statements, str(root))
    _emit(args, doc, text)
    return errors.OK


def statement_comparison(baseline: tuple[str, Path], candidate: tuple[str, Path], root: Path) -> dict[str, Any]:
    """Two profile runs (id, run folder) statement by statement (analysis/run_compare.py), each side
    with the text it measured of its files. UsageError for a run without a report."""
    from .. import workspace
    from ..agent.protocol import REPORT, STATUS
    from ..analysis.model import load_report
    from ..analysis.run_compare import RunLines, compare_statements, measured_files
    from ..jsonio import read_json

    sides = []
    for run_id, run_dir in (baseline, candidate):
        if not (run_dir / REPORT).is_file():
            try:
                status = read_json(run_dir / STATUS)
            except (OSError, ValueError):
                status = {}
            ended = status.get("status") if isinstance(status, dict) else None
            raise errors.UsageError(f"run {run_id} has no report: it ended {ended or 'without one'}")
        report = load_report(run_dir / REPORT)
        own_root = Path(report.get("source_root") or root)
        texts = workspace.measured_texts(run_dir, own_root, measured_files(report, own_root))
        sides.append(RunLines(run_id, report, texts, str(own_root)))
    return compare_statements(*sides)


def _delete(history, root: Path, args: argparse.Namespace) -> int:
    from .. import workspace
    from ..history.index import folder_path

    run_id = history.resolve(args.runs[0])
    row = history.get(run_id)
    folder = folder_path(row["folder"], root)
    runs_dir = (root / workspace.STATE_DIR / workspace.RUNS_DIR).resolve()
    inside = not Path(row["folder"]).is_absolute() and folder.parent.resolve() == runs_dir \
        and folder.name == run_id
    if not inside:
        history.delete(run_id)
        _emit(args, {"deleted": run_id, "run_dir": str(folder), "folder_removed": False},
              f"deleted {run_id} from the history; its folder {folder} is outside .stepscope/ and was left "
              "in place\n")
        return errors.OK
    # Out of the index's sight first (a dot name is no run folder), then out of the history, then gone.
    doomed = runs_dir / f".deleting-{run_id}"
    if folder.is_symlink():
        folder.unlink()  # a link is removed, never what it points at
    elif folder.exists():
        os.rename(folder, doomed)
    history.delete(run_id)
    shutil.rmtree(doomed, ignore_errors=True)
    _emit(args, {"deleted": run_id, "run_dir": str(folder), "folder_removed": True},
          f"deleted {run_id} and its folder\n")
    return errors.OK


def _rebuild(root: Path, args: argparse.Namespace) -> int:
    from ..history import index
    from ..history.store import db_path

    count = index.rebuild(root)
    _emit(args, {"history": str(db_path(root)), "runs": count},
          f"indexed {count} run folder(s) into {db_path(root)}\n")
    return errors.OK
