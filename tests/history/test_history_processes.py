"""The history with real processes: runs finishing at once, and a writer killed in the middle."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from stepscope.history import index
from stepscope.history.store import History, db_path

from .runfolders import measure_folder

WRITERS = 6
RUNS_EACH = 12


def _python(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_runs_finishing_at_once_are_all_recorded(tmp_path: Path):
    folders = [[measure_folder(tmp_path, f"20260105T10{w:02d}{i:02d}Z-train-{w}{i:03d}",
                               [[10.0 + i, 11.0, 12.0] * 20], values=[1.0] * 60) for i in range(RUNS_EACH)]
               for w in range(WRITERS)]
    go = tmp_path / "go"
    writer = """
        import sys, time
        from pathlib import Path
        from stepscope.history import index
        root, go, folders = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
        while not go.exists():
            time.sleep(0.005)
        for folder in folders:
            index.record_run(root, Path(folder))
    """
    reader = """
        import sys, time
        from pathlib import Path
        from stepscope.history.store import History
        root, go = Path(sys.argv[1]), Path(sys.argv[2])
        while not go.exists():
            time.sleep(0.005)
        seen = 0
        for _ in range(200):
            with History.open(root) as h:
                seen = max(seen, len(h.runs()))
        print(seen)
    """
    History.open(tmp_path).close()
    procs = [_python(writer, str(tmp_path), str(go), *map(str, fs)) for fs in folders]
    readers = [_python(reader, str(tmp_path), str(go)) for _ in range(2)]
    time.sleep(0.5)
    go.touch()
    for p in procs + readers:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    with History.open(tmp_path) as h:
        rows = h.runs()
        assert len(rows) == WRITERS * RUNS_EACH
        assert all(len(h.passes(r["id"])) == 60 + 2 for r in rows)  # measured + warm-up, none lost
    conn = sqlite3.connect(db_path(tmp_path))
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_writer_killed_in_the_middle_of_a_write_leaves_nothing_half_written(tmp_path: Path):
    kept = measure_folder(tmp_path, "20260105T100000Z-train-kept", [[10.0, 11.0]])
    index.record_run(tmp_path, kept)
    folder = measure_folder(tmp_path, "20260105T100001Z-train-dies", [[float(i) + 1 for i in range(3000)]],
                            values=[0.5] * 3000)
    # The writer learns how much work the write is on a scratch copy, then writes for real and
    # is killed (SIGKILL: no clean-up of any kind) halfway through its transaction.
    killer = """
        import os, signal, sys
        from pathlib import Path
        from stepscope.history import index
        from stepscope.history.store import History
        root, folder, scratch = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
        rows = index.rows_for(folder, root)
        calls = [0]
        def count():
            calls[0] += 1
        with History.open(scratch) as h:
            h._conn.set_progress_handler(count, 100)
            h.write(rows)
        half = calls[0] // 2
        def kill():
            calls[0] -= 1
            if calls[0] <= half:
                print("killing", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
        with History.open(root) as h:
            h._conn.set_progress_handler(kill, 100)
            h.write(rows)
        print("not killed", flush=True)
    """
    p = _python(killer, str(tmp_path), str(folder), str(tmp_path / "scratch"))
    out, err = p.communicate(timeout=120)
    assert p.returncode == -signal.SIGKILL, (out, err)
    assert out.strip() == "killing"
    with History.open(tmp_path) as h:
        assert h.get(folder.name) is None  # the killed write left no row ...
        assert h.passes(folder.name) == []  # ... and no orphan pass
        assert h.get(kept.name) is not None  # what was there before is intact
    conn = sqlite3.connect(db_path(tmp_path))
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    assert index.rebuild(tmp_path) == 2  # the folder is the source: the run comes back
    with History.open(tmp_path) as h:
        assert len([p for p in h.passes(folder.name) if p.phase == "measured"]) == 3000
