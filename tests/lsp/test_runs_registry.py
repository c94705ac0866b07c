"""The run registry over real folders, no server: what the runs list says of each run, and what
deleting a run may touch."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.history.index import record_run
from stepscope.history.store import History
from stepscope.lsp.runs import RunRegistry, UnknownRun

from ..history.runfolders import measure_folder


def _run_folder(root: Path, name: str) -> Path:
    run = root / ".stepscope" / "runs" / name
    run.mkdir(parents=True)
    (run / "status.json").write_text('{"status": "failed", "exit": 3, "reason": "x"}')
    return run


def test_a_run_is_deleted_only_as_a_folder_of_its_workspace_s_runs(tmp_path: Path):
    root = tmp_path / "ws"
    keep = tmp_path / "elsewhere"
    keep.mkdir()
    (keep / "precious.txt").write_text("keep me")
    registry = RunRegistry()
    link = root / ".stepscope" / "runs" / "20260101T000000Z-linked-0a0a"
    link.parent.mkdir(parents=True)
    link.symlink_to(keep, target_is_directory=True)
    with pytest.raises(UnknownRun, match="is not a run folder"):
        registry.delete(link.name, [root])
    assert (keep / "precious.txt").read_text() == "keep me" and link.is_symlink()
    with pytest.raises(UnknownRun, match="not a run id"):
        registry.delete("../elsewhere", [root])
    run = _run_folder(root, "20260101T000001Z-train-0b0b")
    assert registry.delete(run.name, [root]) == set()
    assert not run.exists() and root.exists() and keep.exists()


def test_a_run_still_going_is_not_deleted(tmp_path: Path):
    root = tmp_path / "ws"
    run = _run_folder(root, "20260101T000002Z-train-0c0c")
    (run / "status.json").unlink()  # no status yet: it may be the one running
    (run / "spec.json").write_text("{}")
    started = (run / "spec.json").stat().st_mtime_ns
    with pytest.raises(Exception, match="still running"):
        RunRegistry().delete(run.name, [root], busy_since=started)
    assert run.exists()
    RunRegistry().delete(run.name, [root], busy_since=None)  # no profile going on: an old, stopped run
    assert not run.exists()


def test_a_measure_run_is_listed_with_its_timed_figure_and_deleted_from_the_history_too(tmp_path: Path):
    root = tmp_path / "ws"
    run = measure_folder(root, "20260101T000003Z-train-0d0d", [[10.0, 10.2, 9.8, 10.1, 10.0]])
    record_run(root, run)
    (listed,) = RunRegistry().list_runs([root])["runs"]
    assert listed["kind"] == "measure" and not listed["analysed"]
    assert listed["msPerStep"] == 10.0 and listed["statusText"].startswith("10.0 ms/step ("), listed
    with History.open(root) as history:
        assert [r["id"] for r in history.runs()] == [run.name]
    RunRegistry().delete(run.name, [root])
    assert not run.exists() and not any((root / ".stepscope" / "runs").iterdir())
    with History.open(root) as history:
        assert history.runs() == []  # `stepscope runs list` does not list a run that is gone
