"""The history database: versions, one transaction per run, resolving runs, rebuilding from folders."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from stepscope import workspace
from stepscope.errors import StepscopeError, UsageError
from stepscope.history import index, schema
from stepscope.history.store import History, Pass, RunRows, db_path

from .runfolders import measure_folder


def test_a_new_history_is_created_at_the_current_version_in_wal_mode(tmp_path: Path):
    with History.open(tmp_path) as h:
        assert h.runs() == []
    conn = sqlite3.connect(db_path(tmp_path))
    assert conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert (tmp_path / ".stepscope" / ".gitignore").read_text().strip().endswith("*")


def test_a_history_from_a_newer_stepscope_is_refused_not_guessed_at(tmp_path: Path):
    History.open(tmp_path).close()
    conn = sqlite3.connect(db_path(tmp_path))
    conn.execute(f"PRAGMA user_version = {schema.SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StepscopeError, match="newer Stepscope"):
        History.open(tmp_path)


def test_migrations_bring_an_older_file_forward_and_keep_its_rows(tmp_path: Path):
    path = tmp_path / "h.db"
    conn = sqlite3.connect(path, isolation_level=None)
    v1 = ("CREATE TABLE t (a INTEGER);",)
    v2 = v1 + ("ALTER TABLE t ADD COLUMN b TEXT; CREATE INDEX t_b ON t (b);",)
    assert schema.migrate(conn, v1) == 0
    conn.execute("INSERT INTO t (a) VALUES (7)")
    assert schema.migrate(conn, v2) == 1
    assert schema.version(conn) == 2
    assert conn.execute("SELECT a, b FROM t").fetchall() == [(7, None)]


def test_a_history_written_at_version_1_is_read_after_the_upgrade_with_its_runs(tmp_path: Path):
    folder = measure_folder(tmp_path, "20260105T101010Z-train-ab12", [[10.0, 11.0, 12.0]])
    db_path(tmp_path).parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db_path(tmp_path), isolation_level=None)
    schema.migrate(conn, schema.MIGRATIONS[:1])  # the file as the first release wrote it
    conn.execute("INSERT INTO runs (id, folder, kind, status, ms_per_step, distortion) "
                 "VALUES ('20260101T000000Z-old-0000', 'runs/x', 'profile', 'complete', 56.1, 18.58)")
    conn.close()
    index.record_run(tmp_path, folder)
    with History.open(tmp_path) as h:
        rows = {r["id"]: r for r in h.runs()}
    assert set(rows) == {"20260101T000000Z-old-0000", folder.name}
    old = rows["20260101T000000Z-old-0000"]
    assert old["distortion"] == 18.58 and old["distortion_overlaps"] is None  # not known for an older run
    assert sqlite3.connect(db_path(tmp_path)).execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION


def test_a_failing_migration_leaves_the_file_at_its_version(tmp_path: Path):
    conn = sqlite3.connect(tmp_path / "h.db", isolation_level=None)
    schema.migrate(conn, ("CREATE TABLE t (a INTEGER);",))
    broken = ("CREATE TABLE t (a INTEGER);", "ALTER TABLE t ADD COLUMN b TEXT; ALTER TABLE nope ADD COLUMN c;")
    with pytest.raises(sqlite3.OperationalError):
        schema.migrate(conn, broken)
    assert schema.version(conn) == 1
    assert [r[1] for r in conn.execute("PRAGMA table_info(t)")] == ["a"]  # b was rolled back too


def test_a_damaged_history_is_refused_in_one_line_and_left_alone(tmp_path: Path):
    path = db_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not a database, " * 100)
    with pytest.raises(StepscopeError) as e:
        History.open(tmp_path)
    assert "runs rebuild" in str(e.value) and "\n" not in str(e.value)
    assert path.read_bytes().startswith(b"this is not a database")


def test_a_run_is_written_with_its_passes_and_replaced_as_a_whole(tmp_path: Path):
    with History.open(tmp_path) as h:
        h.write(RunRows({"id": "r1", "folder": "runs/r1", "kind": "measure", "status": "complete",
                         "machine": {"host": "box"}, "noisy": False},
                        [Pass(0, "measured", 0, 10.0, 2.3), Pass(0, "measured", 1, 11.0, 2.2)]))
        row = h.get("r1")
        assert row["machine"] == {"host": "box"} and row["noisy"] is False
        assert [p.ms for p in h.passes("r1")] == [10.0, 11.0]
        h.write(RunRows({"id": "r1", "folder": "runs/r1", "kind": "measure", "status": "complete"},
                        [Pass(0, "measured", 0, 12.0)]))
        assert [p.ms for p in h.passes("r1")] == [12.0]
        with pytest.raises(ValueError, match="not columns"):
            h.write(RunRows({"id": "r2", "folder": "x", "kind": "measure", "status": "x", "colour": "red"}))
        h.delete("r1")
        assert h.get("r1") is None and h.passes("r1") == []


def test_a_write_that_fails_halfway_leaves_no_row_and_keeps_the_earlier_one(tmp_path: Path):
    """A pass that cannot be stored (no time) fails the write after the run's row went in: the whole
    write is undone, so the history has no row without its passes, and a run written before keeps its
    own."""
    broken = [Pass(0, "measured", 0, 10.0), Pass(0, "measured", 1, None)]  # type: ignore[arg-type]
    with History.open(tmp_path) as h:
        with pytest.raises(sqlite3.IntegrityError):
            h.write(RunRows({"id": "new", "folder": "runs/new", "kind": "measure", "status": "complete"}, broken))
        assert h.get("new") is None and h.passes("new") == []
        h.write(RunRows({"id": "old", "folder": "runs/old", "kind": "measure", "status": "complete",
                         "ms_per_step": 9.0}, [Pass(0, "measured", 0, 9.0)]))
        with pytest.raises(sqlite3.IntegrityError):
            h.write(RunRows({"id": "old", "folder": "runs/old", "kind": "measure", "status": "complete",
                             "ms_per_step": 10.0}, broken))
        with pytest.raises(sqlite3.IntegrityError):
            h.replace_all([RunRows({"id": "other", "folder": "runs/other", "kind": "measure", "status": "x"}, broken)])
    with History.open(tmp_path) as h:  # as another process reads it
        assert [r["id"] for r in h.runs()] == ["old"]
        assert h.get("old")["ms_per_step"] == 9.0 and [p.ms for p in h.passes("old")] == [9.0]


def test_runs_are_named_by_any_part_of_their_name_that_only_they_have(tmp_path: Path):
    with History.open(tmp_path) as h:
        for name in ("20260101T000000Z-train-a1b2", "20260102T000000Z-train-c3d4", "20260102T000000Z-eval-c3d5"):
            h.write(RunRows({"id": name, "folder": f"runs/{name}", "kind": "measure", "status": "complete",
                             "started_utc": name[:8]}))
        assert h.resolve("a1b2") == "20260101T000000Z-train-a1b2"
        assert h.resolve("eval") == "20260102T000000Z-eval-c3d5"
        with pytest.raises(UsageError, match="matches 2 runs"):
            h.resolve("c3d")
        with pytest.raises(UsageError, match="no run matches"):
            h.resolve("zzzz")
        assert [r["id"] for r in h.runs()][0].startswith("20260102")  # newest first


def test_a_run_folder_reads_back_as_its_rows(tmp_path: Path):
    folder = measure_folder(tmp_path, "20260105T101010Z-train-ab12", [[10.0, 11.0, 12.0], [10.5, 11.5, 12.5]],
                            values=[2.3, 2.2, 2.1])
    rows = index.rows_for(folder, tmp_path)
    run = rows.run
    assert run["id"] == folder.name and run["folder"] == f"runs/{folder.name}"
    assert run["kind"] == "measure" and run["status"] == "complete"
    assert run["started_utc"] == "2026-01-05T10:10:10Z"
    assert run["script"] == "train.py" and run["step_line"] == 40
    assert run["processes"] == 2 and run["passes"] == 6
    assert run["scope"]["device"] == "cpu" and run["machine"]["torch"] == "2.13.0"
    measured = [p for p in rows.passes if p.phase == "measured"]
    assert [(p.process, p.idx, p.ms, p.value) for p in measured][:3] == [(0, 0, 10.0, 2.3), (0, 1, 11.0, 2.2),
                                                                         (0, 2, 12.0, 2.1)]
    assert len([p for p in rows.passes if p.phase == "warmup"]) == 4
    assert index.rows_for(tmp_path, tmp_path) is None  # not a run folder


def test_rebuild_indexes_the_folders_again_and_forgets_deleted_ones(tmp_path: Path):
    a = measure_folder(tmp_path, "20260105T101010Z-train-aaaa", [[10.0, 11.0]])
    b = measure_folder(tmp_path, "20260105T101011Z-train-bbbb", [[10.0, 11.0]], status="failed")
    c = measure_folder(tmp_path, "20260105T101012Z-train-cccc", [[10.0, 11.0]], status="incomplete")
    for folder in (a, b, c):
        index.record_run(tmp_path, folder)
    import shutil

    shutil.rmtree(a)
    db_path(tmp_path).unlink()
    for extra in ("-wal", "-shm"):
        Path(str(db_path(tmp_path)) + extra).unlink(missing_ok=True)
    assert index.rebuild(tmp_path) == 2
    with History.open(tmp_path) as h:
        statuses = {r["id"][-4:]: r["status"] for r in h.runs()}
    assert statuses == {"bbbb": "failed", "cccc": "incomplete"}


def test_a_run_kept_outside_the_state_folder_is_named_by_its_absolute_path(tmp_path: Path):
    outside = tmp_path / "elsewhere"
    assert index.folder_ref(outside, tmp_path) == str(outside.resolve())
    inside = tmp_path / workspace.STATE_DIR / "runs" / "x"
    assert index.folder_ref(inside, tmp_path) == "runs/x"
    assert index.folder_path("runs/x", tmp_path) == inside
