"""Opening, writing and reading `.stepscope/stepscope.db`.

Invariants:
- Every write is one `BEGIN IMMEDIATE` transaction: a run's row and its passes appear together,
  and a writer killed in the middle leaves nothing of its write behind.
- Writers wait for each other (BUSY_TIMEOUT_S) instead of failing; the journal is WAL where the
  file system allows it (readers then never wait for a writer), the default journal otherwise.
- A database that is not one (damaged, or another file under that name) is refused in one line
  that says how to rebuild it; it is never deleted or overwritten here.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from .. import workspace
from ..errors import StepscopeError, UsageError
from . import schema

if TYPE_CHECKING:
    from ..measurement.compare import Side

DB_NAME = workspace.HISTORY_DB
BUSY_TIMEOUT_S = 30.0

RUN_COLUMNS = (
    "id", "folder", "kind", "started_utc", "status", "exit", "reason", "script", "step_line", "step_function",
    "git_commit", "git_dirty", "host", "device", "torch", "batch_size", "ms_per_step", "iqr_ms", "p10_ms",
    "p90_ms", "min_ms", "max_ms", "samples_per_s", "noisy", "passes", "processes", "unprofiled_ms",
    "distortion", "baseline", "interleaved", "ratio", "ci_low", "ci_high", "verdict", "values_match", "machine", "scope", "note",
    "distortion_overlaps", "margin",
)
_JSON_COLUMNS = ("machine", "scope")
_BOOL_COLUMNS = ("git_dirty", "noisy", "interleaved", "values_match", "distortion_overlaps")


@dataclass(frozen=True)
class Pass:
    process: int
    phase: str
    idx: int
    ms: float
    value: float | None = None


@dataclass
class RunRows:
    """What the history holds about one run: its row (RUN_COLUMNS; missing ones are NULL) and its
    passes."""

    run: dict[str, Any]
    passes: list[Pass] = field(default_factory=list)


def db_path(root: Path) -> Path:
    return Path(root) / workspace.STATE_DIR / DB_NAME


class History:
    """One connection to a workspace's history. Use as a context manager, or call close()."""

    def __init__(self, path: Path, conn: sqlite3.Connection):
        self.path, self._conn = path, conn

    @classmethod
    def open(cls, root: Path) -> "History":
        """Open (and create, and migrate) the history of the workspace at `root`."""
        path = workspace.state_dir(root) / DB_NAME
        try:
            conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error as e:
            raise StepscopeError(f"cannot open the run history {path}: {e}") from None
        try:
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA journal_mode = WAL").fetchone()  # stays the default where WAL is unsupported
            schema.migrate(conn)
        except sqlite3.DatabaseError as e:
            conn.close()
            raise StepscopeError(f"the run history {path} cannot be read ({e}); move it away and run "
                                 "`stepscope runs rebuild` to index the run folders again") from None
        except BaseException:
            conn.close()
            raise
        conn.row_factory = sqlite3.Row
        return cls(path, conn)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> "History":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing --------------------------------------------------------------------------
    def _transaction(self) -> "_Transaction":
        return _Transaction(self._conn)

    def write(self, rows: RunRows) -> None:
        """Insert or replace one run's row and passes, in one transaction."""
        with self._transaction():
            _write(self._conn, rows)

    def replace_all(self, all_rows: list[RunRows], *, keep: set[str] = frozenset()) -> None:
        """The history becomes exactly `all_rows` (plus the rows whose id is in `keep`), in one
        transaction (`rebuild`)."""
        with self._transaction():
            ids = {r.run["id"] for r in all_rows} | set(keep)
            for (old,) in self._conn.execute("SELECT id FROM runs").fetchall():
                if old not in ids:
                    self._conn.execute("DELETE FROM runs WHERE id = ?", (old,))
            for rows in all_rows:
                _write(self._conn, rows)

    def delete(self, run_id: str) -> None:
        with self._transaction():
            self._conn.execute("DELETE FROM runs WHERE id = ?", (run_id,))

    # -- reading --------------------------------------------------------------------------
    def runs(self, *, kind: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Runs, newest first."""
        sql = "SELECT * FROM runs"
        args: list[Any] = []
        if kind is not None:
            sql += " WHERE kind = ?"
            args.append(kind)
        sql += " ORDER BY started_utc DESC, id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return [_row(r) for r in self._conn.execute(sql, args)]

    def get(self, run_id: str) -> dict[str, Any] | None:
        r = self._conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        return _row(r) if r is not None else None

    def passes(self, run_id: str) -> list[Pass]:
        rows = self._conn.execute(
            "SELECT process, phase, idx, ms, value FROM passes WHERE run_id = ? ORDER BY process, phase, idx",
            (run_id,))
        return [Pass(*r) for r in rows]

    def side(self, run_id: str) -> "Side":
        """A run as one side of a comparison: a measure run's measured passes, or a profile run's
        passes timed without the profiler after its window. UsageError when it has none."""
        from ..measurement.compare import Side

        row = self.get(run_id)
        if row is None:
            raise UsageError(f"no run {run_id!r} in the history")
        phase = "unprofiled" if row["kind"] == "profile" else "measured"  # a measure or a try run: its own passes
        per_process = list(iter_phase(self.passes(run_id), phase))
        if not per_process:
            what = "measured passes" if phase == "measured" else "steps timed without the profiler"
            raise UsageError(f"run {run_id} has no {what} (status: {row['status']})")
        values = [p.value for p in per_process[0]]
        return Side(run_id, row["kind"], [[p.ms for p in process] for process in per_process],
                    values if any(v is not None for v in values) else None,
                    row.get("machine") or {}, row.get("scope") or {"kind": row["kind"]})

    def compare(self, baseline_id: str, candidate_id: str, *, tolerance: float | None = None,
                force: bool = False) -> dict:
        """The comparison of two recorded runs (measurement.compare.compare_sides): paired when the
        candidate was measured interleaved with this very baseline (`measure --against`). A profile
        run's side is its steps timed without the profiler after its window. Raises NotComparable
        when machine or scope differ and `force` is not set; UsageError for one run twice or a run
        without timed passes."""
        from ..measurement.compare import DEFAULT_TOLERANCE, compare_sides

        if baseline_id == candidate_id:
            raise UsageError("compare takes two different runs")
        baseline, candidate = self.side(baseline_id), self.side(candidate_id)
        candidate_row = self.get(candidate_id) or {}
        paired = bool(candidate_row.get("interleaved") and candidate_row.get("baseline") == baseline_id
                      and len(baseline.runs_ms) == len(candidate.runs_ms))
        return compare_sides(baseline, candidate, paired=paired,
                             tolerance=DEFAULT_TOLERANCE if tolerance is None else tolerance, force=force)

    def ids(self) -> list[str]:
        return [r[0] for r in self._conn.execute("SELECT id FROM runs")]

    def resolve(self, ref: str) -> str:
        """The id of the run `ref` names: its id, a path to its folder, or any part of its id that
        only one run has. Anything else is a usage error listing what it could mean."""
        ids = self.ids()
        if ref in ids:
            return ref
        as_path = Path(ref)
        if as_path.is_dir():
            name = as_path.resolve().name
            if name in ids:
                return name
        found = [i for i in ids if ref and ref in i]
        if len(found) == 1:
            return found[0]
        if not found:
            raise UsageError(f"no run matches {ref!r} in {self.path} (see `stepscope runs list`)")
        shown = ", ".join(sorted(found)[:5]) + (", ..." if len(found) > 5 else "")
        raise UsageError(f"{ref!r} matches {len(found)} runs ({shown}); give more of the name")


class _Transaction:
    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def __enter__(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *_: object) -> None:
        if exc_type is None:
            self._conn.execute("COMMIT")
        else:
            self._conn.execute("ROLLBACK")


def _write(conn: sqlite3.Connection, rows: RunRows) -> None:
    unknown = set(rows.run) - set(RUN_COLUMNS)
    if unknown:
        raise ValueError(f"not columns of runs: {', '.join(sorted(unknown))}")
    values = {c: rows.run.get(c) for c in RUN_COLUMNS}
    for c in _JSON_COLUMNS:
        if values[c] is not None:
            values[c] = json.dumps(values[c], sort_keys=True)
    for c in _BOOL_COLUMNS:
        if values[c] is not None:
            values[c] = int(bool(values[c]))
    conn.execute("DELETE FROM runs WHERE id = ?", (values["id"],))  # its passes go with it (cascade)
    conn.execute(f"INSERT INTO runs ({', '.join(RUN_COLUMNS)}) VALUES ({', '.join(':' + c for c in RUN_COLUMNS)})",
                 values)
    conn.executemany("INSERT INTO passes (run_id, process, phase, idx, ms, value) VALUES (?, ?, ?, ?, ?, ?)",
                     [(values["id"], p.process, p.phase, p.idx, p.ms, p.value) for p in rows.passes])


def _row(r: sqlite3.Row) -> dict[str, Any]:
    out = dict(r)
    for c in _JSON_COLUMNS:
        if out.get(c) is not None:
            out[c] = json.loads(out[c])
    for c in _BOOL_COLUMNS:
        if out.get(c) is not None:
            out[c] = bool(out[c])
    return out


def iter_phase(passes: list[Pass], phase: str) -> Iterator[list[Pass]]:
    """The passes of one phase, grouped by process, in order."""
    by_process: dict[int, list[Pass]] = {}
    for p in passes:
        if p.phase == phase:
            by_process.setdefault(p.process, []).append(p)
    for process in sorted(by_process):
        yield sorted(by_process[process], key=lambda p: p.idx)
