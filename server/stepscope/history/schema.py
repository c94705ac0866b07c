"""The history's tables and their versions.

`PRAGMA user_version` holds the schema version: 0 for a new file, len(MIGRATIONS) for a file this
code wrote. `migrate` applies the missing migrations in one transaction, so a file is at one
version or the next, never in between; a file of a newer version (written by a newer Stepscope)
is refused rather than guessed at. A migration only ever adds to what an older one made: a newer
Stepscope can read what an older one wrote.

Tables (version 1):
- `runs`: one row per run folder, keyed by the folder's name. The figures a list or a comparison
  needs are columns; `machine` and `scope` are the JSON records the comparability check reads.
- `passes`: every timed pass or step of a run: `process` (0.. for `--runs`), `phase` ("warmup",
  "measured" for measure; "profiled", "unprofiled-warmup", "unprofiled" for profile), `idx` (its
  order within the phase), `ms`, and `value` (the loss or `--value`, when recorded).
- A profile run's `distortion_overlaps` (version 2): its profiled steps and the steps timed after
  the window have overlapping middle halves, so its `distortion` is not the profiler's cost.
- `kind` is "profile", "measure" or "try" (a measure run of a change, against the workspace as it
  is: its `baseline`).
- A measure run compared with another has its `baseline` (that run's id), `interleaved` (whether
  their processes alternated, as with `--against`), `ratio`, `ci_low`, `ci_high`, `verdict` and
  `values_match`, and (version 3) the `margin` its verdict was called against.
"""

from __future__ import annotations

import sqlite3
from typing import Sequence

from ..errors import StepscopeError

MIGRATIONS: tuple[str, ...] = (
    # version 1
    """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        folder TEXT NOT NULL,
        kind TEXT NOT NULL,
        started_utc TEXT,
        status TEXT NOT NULL,
        exit INTEGER,
        reason TEXT,
        script TEXT,
        step_line INTEGER,
        step_function TEXT,
        git_commit TEXT,
        git_dirty INTEGER,
        host TEXT,
        device TEXT,
        torch TEXT,
        batch_size INTEGER,
        ms_per_step REAL,
        iqr_ms REAL,
        p10_ms REAL,
        p90_ms REAL,
        min_ms REAL,
        max_ms REAL,
        samples_per_s REAL,
        noisy INTEGER,
        passes INTEGER,
        processes INTEGER,
        unprofiled_ms REAL,
        distortion REAL,
        baseline TEXT,
        interleaved INTEGER,
        ratio REAL,
        ci_low REAL,
        ci_high REAL,
        verdict TEXT,
        values_match INTEGER,
        machine TEXT,
        scope TEXT,
        note TEXT
    );
    CREATE INDEX runs_by_start ON runs (started_utc);
    CREATE TABLE passes (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        process INTEGER NOT NULL,
        phase TEXT NOT NULL,
        idx INTEGER NOT NULL,
        ms REAL NOT NULL,
        value REAL,
        PRIMARY KEY (run_id, process, phase, idx)
    );
    """,
    # version 2: whether a profile run's window and its steps after the window overlap (1), so that its
    # distortion is the steps' own variation and is not said as the profiler's cost; NULL where unknown
    """
    ALTER TABLE runs ADD COLUMN distortion_overlaps INTEGER;
    """,
    # version 3: the margin a compared measure run's verdict was called against (0.01, or 0.05 between
    # single processes), so a listing can say "no difference larger than 1%" apart from "inconclusive"
    """
    ALTER TABLE runs ADD COLUMN margin REAL;
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)


def version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, migrations: Sequence[str] = MIGRATIONS) -> int:
    """Bring the database to len(migrations); return the version it was at. The connection must be
    in autocommit mode (isolation_level None): the migrations run in one IMMEDIATE transaction."""
    known = len(migrations)
    found = version(conn)
    if found == known:
        return found
    conn.execute("BEGIN IMMEDIATE")  # another process may be migrating: wait for it, then look again
    try:
        found = version(conn)
        if found > known:
            raise StepscopeError(f"the run history was written by a newer Stepscope (schema version {found}, "
                                 f"this one reads up to {known}); upgrade Stepscope")
        for step in migrations[found:]:
            for statement in _statements(step):
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {known}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return found


def _statements(script: str) -> list[str]:
    """The statements of a migration, one by one (executescript would commit the transaction)."""
    out, current = [], ""
    for piece in script.split(";"):
        current += piece + ";"
        if sqlite3.complete_statement(current):  # not a ';' inside a string or a trigger body
            if current.strip(" \n\t;"):
                out.append(current.strip())
            current = ""
    current = current[:-1]  # the ';' the last piece never had
    if current.strip():
        raise ValueError(f"incomplete statement in a migration: {current.strip()[:60]}")
    return out
