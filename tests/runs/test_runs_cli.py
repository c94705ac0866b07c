"""`stepscope runs`: the history through the real command, as a user types it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from stepscope import jsonio, workspace
from stepscope.agent import protocol
from stepscope.history import index
from tests.conftest import run_stepscope
from tests.history.runfolders import measure_folder


def _runs(ws: Path, *args: str):
    return run_stepscope("runs", *args, "--root", str(ws), cwd=ws)


@pytest.fixture
def history(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    slow = [[10.0 + 0.01 * i for i in range(20)] for _ in range(3)]
    fast = [[8.0 + 0.01 * i for i in range(20)] for _ in range(3)]
    for name, runs in (("20260105T100000Z-train-aaaa", slow), ("20260105T110000Z-train-bbbb", fast)):
        index.record_run(ws, measure_folder(ws, name, runs, values=[2.0 - 0.01 * i for i in range(20)]))
    return ws


def test_list_shows_the_runs_newest_first(history: Path):
    r = _runs(history)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "bbbb" in lines[1] and "aaaa" in lines[2]
    assert "8.09 ms/step (IQR 0.095 ms, 1% of the median)" in lines[1] and "train.py:40" in lines[1]
    doc = json.loads(_runs(history, "list", "--json").stdout)
    assert [Path(r["run_dir"]).name for r in doc["runs"]] == ["20260105T110000Z-train-bbbb",
                                                              "20260105T100000Z-train-aaaa"]
    assert all(Path(r["run_dir"]).is_absolute() for r in doc["runs"])


def test_a_missing_history_is_rebuilt_from_the_run_folders(history: Path):
    (history / ".stepscope" / "stepscope.db").unlink()
    r = _runs(history, "list", "--json")
    assert r.returncode == 0
    assert "indexed 2 run folder(s)" in r.stderr
    assert len(json.loads(r.stdout)["runs"]) == 2


def test_show_names_a_run_by_a_part_of_its_name(history: Path):
    r = _runs(history, "show", "aaaa")
    assert r.returncode == 0, r.stderr
    assert "20260105T100000Z-train-aaaa  (measure, complete)" in r.stdout
    assert "measured 60 value(s)" in r.stdout
    doc = json.loads(_runs(history, "show", "aaaa", "--json").stdout)
    assert len(doc["passes"]["measured"]["ms"]) == 3 and doc["passes"]["measured"]["values"][0][0] == 2.0
    missing = _runs(history, "show", "zzzz")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "no run matches" in missing.stderr
    ambiguous = _runs(history, "show", "train")
    assert ambiguous.returncode == 2 and "matches 2 runs" in ambiguous.stderr


def test_compare_gives_the_ratio_its_interval_and_the_verdict(history: Path):
    r = _runs(history, "compare", "aaaa", "bbbb", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "faster"
    assert doc["ratio"] == pytest.approx(8.095 / 10.095, rel=1e-3)
    assert doc["ci95"][0] <= doc["ratio"] <= doc["ci95"][1]
    assert doc["values_match"] is True
    assert doc["method"]["processes"] == [3, 3] and doc["method"]["run_to_run_observed"] is True
    again = json.loads(_runs(history, "compare", "aaaa", "bbbb", "--json").stdout)
    assert again["ci95"] == doc["ci95"]  # seeded: the same data, the same interval
    text = _runs(history, "compare", "aaaa", "bbbb").stdout
    assert "ratio 0.802" in text and ": faster" in text and "values: the same" in text


def test_a_run_is_paired_only_with_the_baseline_it_was_interleaved_with(history: Path):
    """`measure --against` records the candidate as interleaved with its own baseline: compared with
    that run its processes are drawn in pairs; compared with any other run of as many processes, they
    are not (their processes never ran back to back)."""
    paired_with = "20260105T100000Z-train-aaaa"
    candidate = measure_folder(history, "20260105T130000Z-train-dddd",
                               [[8.0 + 0.01 * i for i in range(20)] for _ in range(3)],
                               values=[2.0 - 0.01 * i for i in range(20)])
    doc = jsonio.read_json(candidate / protocol.MEASURE)
    doc["baseline"] = {"run": paired_with, "interleaved": True}
    (candidate / protocol.MEASURE).unlink()
    jsonio.write_json(candidate / protocol.MEASURE, doc)
    index.record_run(history, candidate)
    own = json.loads(_runs(history, "compare", "aaaa", "dddd", "--json").stdout)
    assert own["method"]["resampling"] == "interleaved pairs of processes, then passes"
    other = json.loads(_runs(history, "compare", "bbbb", "dddd", "--json").stdout)
    assert other["method"]["resampling"] == "processes, then passes"
    assert "processes, then passes; 3 and 3 processes" in _runs(history, "compare", "bbbb", "dddd").stdout


def test_two_processes_a_side_give_the_golden_interval_and_the_one_percent_margin(tmp_path: Path):
    """The fixed data of tests/measurement/test_compare.py, recorded as two runs of 2 processes each:
    `runs compare` gives the same interval, the margin it called against, and says the verdict."""
    from tests.measurement.test_compare import GOLDEN, TWO_A, TWO_B

    ws = tmp_path / "ws"
    ws.mkdir()
    for name, runs in (("20260105T100000Z-train-aaaa", TWO_A), ("20260105T110000Z-train-bbbb", TWO_B)):
        index.record_run(ws, measure_folder(ws, name, runs))
    doc = json.loads(_runs(ws, "compare", "aaaa", "bbbb", "--json").stdout)
    assert doc["ci95"] == pytest.approx(GOLDEN[False], rel=1e-9)
    assert doc["method"]["run_to_run_observed"] is True and doc["margin"] == 0.01
    assert doc["verdict"] == "no detectable difference" and doc["verdict_detail"] == "inconclusive"
    text = _runs(ws, "compare", "aaaa", "bbbb").stdout
    assert "ratio 0.952 (95% interval 0.845–1.044): inconclusive: the interval reaches past ±1% and inside it" in text


def test_runs_that_measured_different_things_are_not_compared_unless_forced(history: Path):
    other = measure_folder(history, "20260105T120000Z-train-cccc", [[9.0, 9.1, 9.2]] * 2,
                           header="for batch in eval_loader:")
    measure = jsonio.read_json(other / protocol.MEASURE)
    measure["scope"]["batch_size"] = 128
    (other / protocol.MEASURE).unlink()
    jsonio.write_json(other / protocol.MEASURE, measure)
    index.record_run(history, other)
    refused = _runs(history, "compare", "aaaa", "cccc")
    assert refused.returncode == 5
    assert "batch size (64 vs 128)" in refused.stderr and "step loop" in refused.stderr
    assert "--force" in refused.stderr and refused.stderr.count("\n") == 1
    forced = _runs(history, "compare", "aaaa", "cccc", "--force", "--json")
    assert forced.returncode == 0
    assert "batch size (64 vs 128)" in json.loads(forced.stdout)["differences"]


def test_delete_removes_the_row_and_the_folder_and_nothing_else(history: Path):
    folder = history / ".stepscope" / "runs" / "20260105T100000Z-train-aaaa"
    r = _runs(history, "delete", "aaaa")
    assert r.returncode == 0, r.stderr
    assert not folder.exists()
    assert (history / ".stepscope" / "runs" / "20260105T110000Z-train-bbbb").is_dir()
    assert [p.name for p in (history / ".stepscope" / "runs").iterdir()] == ["20260105T110000Z-train-bbbb"]
    doc = json.loads(_runs(history, "list", "--json").stdout)
    assert [Path(r["run_dir"]).name for r in doc["runs"]] == ["20260105T110000Z-train-bbbb"]


def test_delete_never_removes_a_folder_outside_the_state_folder(history: Path, tmp_path: Path):
    outside = tmp_path / "kept-elsewhere"
    made = measure_folder(tmp_path / "scratch", "x", [[1.0, 2.0]])
    made.rename(outside)
    index.record_run(history, outside)
    r = _runs(history, "delete", "kept-elsewhere")
    assert r.returncode == 0, r.stderr
    assert "left in place" in r.stdout
    assert (outside / protocol.SPEC).exists()


def test_delete_of_a_linked_run_folder_removes_the_link_only(history: Path, tmp_path: Path):
    target = tmp_path / "precious"
    target.mkdir()
    (target / "data.bin").write_bytes(b"keep me")
    runs_dir = history / ".stepscope" / "runs"
    link = runs_dir / "20260105T130000Z-train-link"
    os.symlink(target, link)
    with __import__("stepscope.history.store", fromlist=["History"]).History.open(history) as h:
        from stepscope.history.store import RunRows

        h.write(RunRows({"id": link.name, "folder": f"runs/{link.name}", "kind": "measure", "status": "complete"}))
    r = _runs(history, "delete", "link")
    assert r.returncode == 0, r.stderr
    assert not link.exists() and (target / "data.bin").read_bytes() == b"keep me"


def test_wrong_number_of_runs_is_a_usage_error(history: Path):
    r = _runs(history, "compare", "aaaa")
    assert r.returncode == 2 and "takes 2 runs" in r.stderr


def test_listing_a_folder_without_runs_says_so_and_creates_nothing(tmp_path: Path):
    # a listing that created `.stepscope/` would make the folder a workspace for every run below it
    for args in ((), ("--json",)):
        r = _runs(tmp_path, *args)
        assert r.returncode == 0, r.stderr
        assert ("no runs recorded yet" in r.stdout) if not args else json.loads(r.stdout)["runs"] == []
    assert list(tmp_path.iterdir()) == []


TINY = """\
import torch

torch.manual_seed(0)
w = torch.randn(64, 64) / 8
x = torch.randn(8, 64)
for step in range(12):
    y = x @ w
    for _ in range(30):
        y = torch.tanh(y @ w)
    s = y.sum()
"""


def _profile(ws: Path, line: int) -> Path:
    made = run_stepscope("profile", "train.py", "--line", str(line), "--wait", "1", "--warmup", "1", "--active", "2",
                         "--json", cwd=ws)
    assert made.returncode == 0, made.stderr
    return Path(json.loads(made.stdout)["traces"][0]).parent


@pytest.mark.torch
def test_two_profile_runs_compare_statement_by_statement_through_an_edit_that_moves_lines(tmp_path: Path):
    """Two lines inserted above the loop, and its last statement changed: the heavy statement is
    matched across the move (line 9 then, 11 now), never set beside what line 9 holds now; the changed
    statement is listed in each run's code only; a run whose code is not known is matched by number,
    and says so."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "train.py").write_text(TINY)
    first = _profile(ws, 6)
    # every profile run keeps the text it measured: what lets a later comparison match through edits
    assert json.loads((first / "sources.json").read_text())["files"] == {"train.py": TINY}
    edited = TINY.replace("x = torch.randn(8, 64)\n", "x = torch.randn(8, 64)\n# two lines\n# above the loop\n")
    edited = edited.replace("    s = y.sum()\n", "    s = y.mean()\n")
    (ws / "train.py").write_text(edited)
    second = _profile(ws, 8)

    r = _runs(ws, "compare", first.name, second.name, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["verdict"] in ("faster", "slower", "no detectable difference")  # today's JSON is all still there
    by_text = {e["text"]: e for e in doc["lines"]}
    heavy = by_text["y = torch.tanh(y @ w)"]
    assert (heavy["a"]["line"], heavy["b"]["line"], heavy["match"]) == (9, 11, "code")
    assert heavy["a"]["file"] == heavy["b"]["file"] == str((ws / "train.py").resolve())
    assert heavy["a"]["wall_ms"] > 0 and heavy["b"]["wall_ms"] > 0
    assert heavy["ratio"] == pytest.approx(heavy["b"]["wall_ms"] / heavy["a"]["wall_ms"], rel=1e-3)
    # what line 9 holds now (the inner loop's header) is its own statement, set beside its own past
    assert (by_text["for _ in range(30):"]["a"]["line"], by_text["for _ in range(30):"]["b"]["line"]) == (8, 10)
    assert by_text["s = y.sum()"]["b"] is None and by_text["s = y.sum()"]["a"]["line"] == 10
    assert by_text["s = y.mean()"]["a"] is None and by_text["s = y.mean()"]["b"]["line"] == 12
    text = _runs(ws, "compare", first.name, second.name).stdout
    row = next(line for line in text.splitlines() if line.endswith("y = torch.tanh(y @ w)"))
    assert row.split()[:2] == ["train.py:9", "train.py:11"]
    only_a = text.split("only in A's code")[1].split("only in B's code")[0]
    assert "train.py:10" in only_a and "s = y.sum()" in only_a
    assert "s = y.mean()" in text.split("only in B's code")[1]

    # a run made before sources were kept, whose file changed since: matched by number, and said
    (first / "sources.json").unlink()
    by_number = json.loads(_runs(ws, "compare", first.name, second.name, "--json").stdout)
    assert {e["match"] for e in by_number["lines"]} == {"number"}
    assert any("train.py is not known" in n and "matched by number" in n for n in by_number["statements"]["notes"])
