"""Where a run's lines are in a document's current text (source/linemap.py), and what deleting a run may
touch (runs.py): pure functions and the registry over real folders, no server."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.source.linemap import LineMap
from stepscope.lsp.runs import RunRegistry, UnknownRun

MEASURED = "import torch\nfor x in data:\n    y = model(x)\n    loss = y.sum()\n    loss.backward()\n"


def test_the_same_text_maps_every_line_to_itself():
    same = LineMap.between(MEASURED, MEASURED)
    assert same.identical and same.changed == 0
    assert [same.now(i) for i in range(5)] == [0, 1, 2, 3, 4]


def test_lines_below_an_insertion_move_and_an_edited_line_has_no_counterpart():
    lines = MEASURED.split("\n")
    lines[3] = "    loss = y.mean()"  # edited
    lines[1:1] = ["# a", "# b"]  # two lines inserted above the loop
    moved = LineMap.between(MEASURED, "\n".join(lines))
    assert [moved.now(i) for i in range(5)] == [0, 3, 4, None, 6]
    assert moved.then(6) == 4 and moved.then(1) is None and moved.then(5) is None
    assert moved.changed == 1 and not moved.identical


def test_a_deleted_line_is_gone_and_the_rest_move_up():
    lines = MEASURED.split("\n")
    del lines[2]
    moved = LineMap.between(MEASURED, "\n".join(lines))
    assert [moved.now(i) for i in range(5)] == [0, 1, None, 2, 3]


def test_line_endings_and_trailing_blanks_do_not_count_as_changes():
    crlf = MEASURED.replace("\n", "\r\n").replace("y.sum()", "y.sum()   ")
    assert [LineMap.between(MEASURED, crlf).now(i) for i in range(5)] == [0, 1, 2, 3, 4]


def test_repeated_lines_map_once_each():
    measured = "a\nx\nx\nb\n"
    moved = LineMap.between(measured, "a\nx\nb\n")  # one of two identical lines deleted
    kept = [moved.now(i) for i in range(4)]
    assert kept.count(None) == 1 and kept[0] == 0 and kept[3] == 2
    assert len({k for k in kept if k is not None}) == 3  # never two measured lines on one line


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
