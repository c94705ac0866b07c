"""A distributed run's own records (no torch): scenario.json and files.json made from what each rank
wrote, and the analysis reading each rank's trace with that rank's own records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stepscope.analysis.report import analyze
from stepscope.capture.rank_records import threads_note, write_run_records
from stepscope.workspace import RunFolder

from ..analysis.kineto_synth import Synth

OK_ENDINGS = {0: {"exit": 0, "reason": None}, 1: {"exit": 0, "reason": None}}


def _record(rank: int, *, ms_to_first_step: float = 100.0) -> dict:
    return {"machine": {"device": "CPU only", "rank": rank, "world_size": 2},
            "distributed": {"world_size": 2, "rank": rank, "local_rank": rank,
                            "process_group": {"backend": "gloo", "rank": rank, "world_size": 2}},
            "startup": {"to_first_step_ms": ms_to_first_step, "first_steps_ms": []},
            "traces": [f"/run/trace-rank{rank}.json"], "steps_run": 4, "active_steps_recorded": 3,
            "window_complete": True, "schedule": {"wait": 0, "warmup": 1, "active": 3, "repeat": 1}}


def _write(run: Path, name: str, doc: dict) -> None:
    (run / name).write_text(json.dumps(doc))


def _rank_files(run: Path, rank: int, files: dict[str, str], root: Path) -> None:
    _write(run, f"scenario-rank{rank}.json", _record(rank, ms_to_first_step=100.0 + rank))
    _write(run, f"files-rank{rank}.json", {"root": str(root), "files": files})


def test_the_main_record_is_rank_0s_with_every_ranks_ending(tmp_path: Path):
    run = tmp_path / "run"
    run.mkdir()
    _rank_files(run, 0, {"f0": "train.py", "f1": "net.py"}, tmp_path)
    _rank_files(run, 1, {"f0": "train.py", "f1": "net.py", "f2": "extra.py"}, tmp_path)
    write_run_records(RunFolder(run), 2, OK_ENDINGS)

    scenario = json.loads((run / "scenario.json").read_text())
    assert scenario["machine"]["rank"] == 0 and scenario["startup"]["to_first_step_ms"] == 100.0
    assert scenario["distributed"]["world_size"] == 2 and scenario["distributed"]["rank"] == 0
    assert [(e["rank"], e["exit"], e["record"], e["to_first_step_ms"]) for e in scenario["distributed"]["ranks"]] == [
        (0, 0, "scenario-rank0.json", 100.0), (1, 0, "scenario-rank1.json", 101.0)]
    # tables that agree are merged; the ranks' own files stay as they wrote them
    assert json.loads((run / "files.json").read_text())["files"] == {"f0": "train.py", "f1": "net.py", "f2": "extra.py"}
    assert json.loads((run / "scenario-rank1.json").read_text()) == _record(1, ms_to_first_step=101.0)


def test_without_rank_0s_record_the_lowest_rank_present_is_the_main_one(tmp_path: Path):
    run = tmp_path / "run"
    run.mkdir()
    _rank_files(run, 1, {"f0": "train.py"}, tmp_path)
    endings = {0: {"exit": None, "reason": "stopped before its first step: rank 1 failed"}, 1: {"exit": 3, "reason": "boom"}}
    write_run_records(RunFolder(run), 2, endings)
    scenario = json.loads((run / "scenario.json").read_text())
    assert scenario["distributed"]["rank"] == 1
    assert scenario["distributed"]["ranks"][0] == {"rank": 0, **endings[0], "record": None}
    assert scenario["distributed"]["ranks"][1]["node"] is None  # the record (made up here) names no node

    empty = tmp_path / "empty"
    empty.mkdir()
    write_run_records(RunFolder(empty), 2, endings)
    assert not list(empty.iterdir())  # nothing to make a record from: no scenario.json


def test_each_rank_is_analysed_with_its_own_file_table_and_record(tmp_path: Path):
    """Ranks that instrumented files in another order give one id two meanings: files.json cannot
    serve both, so each rank's trace is read with its own table (and its own scenario)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("train.py", "a.py", "b.py"):
        (ws / name).write_text("\n" * 20)
    run = tmp_path / "run"
    run.mkdir()
    _write(run, "files.json", {"root": str(ws), "files": {"f0": "train.py"}})
    _rank_files(run, 0, {"f0": "train.py", "f1": "a.py"}, ws)
    _rank_files(run, 1, {"f0": "train.py", "f1": "b.py"}, ws)
    for rank in (0, 1):  # no distributedInfo: the rank comes from each rank's own record
        s = Synth(devices=[])
        for k in range(3):
            t = k * 1000 * (rank + 1)
            s.step(k + 1, t, 1000 * (rank + 1))
            s.region("ss:f0:5", t + 100, 200)
            s.region("ss:f1:7", t + 400, 300)
        s.write(run / f"trace-rank{rank}.json")
    write_run_records(RunFolder(run), 2, OK_ENDINGS)
    assert json.loads((run / "files.json").read_text())["files"] == {"f0": "train.py", "f1": "a.py"}

    report = analyze([run])
    assert report["scenario"]["distributed"]["ranks"]  # the headline's record is the run's scenario.json
    by_rank = {entry["rank"]: entry for entry in report["ranks"]}
    assert by_rank[0]["ms_per_step"] == pytest.approx(1.0) and by_rank[1]["ms_per_step"] == pytest.approx(2.0)
    assert {(Path(e["file"]).name, e["line"]) for e in by_rank[0]["lines"]} == {("train.py", 5), ("a.py", 7)}
    assert {(Path(e["file"]).name, e["line"]) for e in by_rank[1]["lines"]} == {("train.py", 5), ("b.py", 7)}
    assert report["slowest_rank"] == 1


def test_the_ranks_are_found_in_the_run_folder_when_the_world_size_is_unknown(tmp_path: Path):
    """Under a launcher the world size is known once the ranks report: the ranks are those that wrote a
    record or were heard of, plus any the launcher's world size says should have been there."""
    run = tmp_path / "run"
    run.mkdir()
    _rank_files(run, 0, {"f0": "train.py"}, tmp_path)
    _rank_files(run, 2, {"f0": "train.py"}, tmp_path)
    write_run_records(RunFolder(run), None, {0: OK_ENDINGS[0], 1: {"exit": None, "reason": "stopped in step 2"}})
    ranks = json.loads((run / "scenario.json").read_text())["distributed"]["ranks"]
    assert [(e["rank"], e["exit"], e["record"]) for e in ranks] == [
        (0, 0, "scenario-rank0.json"), (1, None, None), (2, None, "scenario-rank2.json")]
    assert ranks[2]["reason"] == "no events were read from this rank"  # a record, but no events


def test_a_run_whose_processes_had_no_rank_gets_no_merged_records(tmp_path: Path):
    run = tmp_path / "run"
    run.mkdir()
    write_run_records(RunFolder(run), None, {None: {"exit": 0, "reason": None}})
    assert not list(run.iterdir())


@pytest.mark.parametrize(("ranks", "said"), [
    # deepspeed's launcher leaves OMP_NUM_THREADS unset: two ranks on a CPU-only machine crowd its cores
    ([("vm", None, None), ("vm", None, None)], "OMP_NUM_THREADS was not set for the 2 ranks on vm (2 cores): each "
     "rank's torch takes a thread per core"),
    ([("vm", "1", None), ("vm", "1", None)], None),  # torchrun's and accelerate's 1
    ([("a", None, None), ("b", None, None)], None),  # one rank per machine
    ([("vm", None, "cuda"), ("vm", None, "cuda")], None),  # a GPU machine's step does not compute on the CPU
])
def test_ranks_sharing_a_cpu_machine_without_omp_num_threads_are_said(tmp_path: Path, ranks: list, said: str | None):
    for rank, (host, threads, accelerator) in enumerate(ranks):
        _write(tmp_path, f"scenario-rank{rank}-1.json",
               {"machine": {"host": host, "cpu_count": 2, "accelerator": accelerator},
                "distributed": {"rank": rank, "omp_num_threads": threads}})
    note = threads_note(RunFolder(tmp_path), process=1)
    assert (note is None) if said is None else note.startswith(said)
    assert threads_note(RunFolder(tmp_path), process=0) is None  # another process's records
