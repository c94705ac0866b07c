"""`stepscope measure` under a launcher (`--launcher CMD`, `--nproc N`): the real launchers on the CPU
(gloo, 2 ranks), every rank timed in every process, the figures of each process's slowest rank,
each rank's own, and a comparison made from the slowest ranks."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import pytest

from tests.capture.ddp_program import write_ddp_program
from tests.conftest import run_stepscope

pytestmark = [pytest.mark.torch, pytest.mark.slow]

FEW = ("--warmup", "2", "--passes", "5")


def _timings(run: Path, rank: int, process: int) -> dict:
    return json.loads((run / (f"timings-rank{rank}-{process}.json" if process else f"timings-rank{rank}.json"))
                      .read_text())


def test_every_rank_is_timed_and_the_figures_are_the_slowest_ranks(workspace: Path):
    write_ddp_program(workspace, "ddp.py")
    launcher = f"{sys.executable} -m torch.distributed.run --standalone --nproc-per-node 2"
    r = run_stepscope("measure", "ddp.py", "--launcher", launcher, "--runs", "2", *FEW, "--json", cwd=workspace)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    run = Path(doc["run_dir"])
    # each rank of each process wrote its own records; the second process's are named for it
    names = {p.name for p in run.iterdir()}
    assert {f"{kind}-rank{rank}{suffix}" for kind in ("timings", "scenario") for rank in (0, 1)
            for suffix in (".json", "-1.json")} <= names
    assert {"events-rank0.jsonl", "events-rank1.jsonl", "events-rank0-1.jsonl", "events-rank1-1.jsonl",
            "program.log", "program-1.log", "scenario.json", "scenario-1.json", "agent"} <= names
    timings = {(rank, process): _timings(run, rank, process) for rank in (0, 1) for process in (0, 1)}

    # each rank's own figures, over its passes of both processes
    assert [entry["rank"] for entry in doc["ranks"]] == [0, 1]
    for entry in doc["ranks"]:
        rank = entry["rank"]
        assert entry["raw_ms"] == timings[(rank, 0)]["raw_ms"] + timings[(rank, 1)]["raw_ms"]
        assert entry["passes"] == 10 and entry["median_ms"] == pytest.approx(statistics.median(entry["raw_ms"]))
        assert entry["run_medians_ms"] == pytest.approx([statistics.median(timings[(rank, p)]["raw_ms"])
                                                         for p in (0, 1)])
    slowest = max(doc["ranks"], key=lambda e: e["median_ms"])["rank"]
    assert doc["slowest_rank"] == slowest and [e["slowest"] for e in doc["ranks"]] == [r == slowest for r in (0, 1)]

    # a process's figures are its slowest rank's passes, and the run's are over those
    for process, entry in enumerate(doc["runs"]):
        medians = {rank: statistics.median(timings[(rank, process)]["raw_ms"]) for rank in (0, 1)}
        assert entry["rank"] == max(medians, key=medians.get)
        assert entry["raw_ms"] == timings[(entry["rank"], process)]["raw_ms"]
    assert doc["raw_ms"] == doc["runs"][0]["raw_ms"] + doc["runs"][1]["raw_ms"]
    assert doc["median_ms"] == pytest.approx(statistics.median(doc["raw_ms"]))
    assert doc["variation"]["run_medians_ms"] == pytest.approx([e["median_ms"] for e in doc["runs"]])
    # the values are rank 0's, the same in both processes (same seeds)
    assert doc["values_rank"] == 0 and doc["values"] == timings[(0, 0)]["values"] and len(doc["values"]) == 5
    assert doc["values_consistent"] is True
    assert (doc["scope"]["world_size"], doc["scope"]["launcher"]) == (2, launcher)

    # --nproc 2 compared with it: the verdict is made from each side's slowest ranks
    r = run_stepscope("measure", "ddp.py", "--nproc", "2", *FEW, "--compare", run.name, "--json",
                      cwd=workspace)
    assert r.returncode == 0, r.stderr
    compared = json.loads(r.stdout)
    assert compared["scope"]["world_size"] == 2 and [e["rank"] for e in compared["ranks"]] == [0, 1]
    assert compared["baseline"]["run"] == run.name
    assert compared["baseline"]["median_ms"] == pytest.approx(doc["median_ms"])
    # the ratio of the slowest ranks' paces: their medians, or their means where a side's passes are bursty
    pace = "mean_ms" if compared["method"]["statistic"] == "mean" else "median_ms"
    assert compared["ratio"] == pytest.approx(compared[pace] / doc[pace])
    assert compared["values_check"]["match"] is True  # rank 0's losses, the same computation


def test_a_launcher_and_nproc_are_not_combined(workspace: Path):
    r = run_stepscope("measure", "train_ddp.py", "--launcher", "torchrun", "--nproc", "2", cwd=workspace)
    assert r.returncode == 2
    assert r.stderr.strip() == ("stepscope: a launcher and nproc > 1 cannot be combined: the launcher chooses how "
                                "many processes to start")
    assert not (workspace / ".stepscope").exists()
