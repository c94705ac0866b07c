"""A folder of per-rank traces: each rank's own ms/step, GPU time and lines, and the slowest rank named.

Each rank runs 2 steps of its own length (rank 0: 1 ms, rank 1: 3 ms, rank 2: 2 ms); in each step:
  train.py:10 `forward_step` [100, 400] launches at 150 a kernel running [200, 500]
  train.py:20 `sync_grads`   [500, L - 100] launches at 550 a kernel running [600, 700] (rank 1 waits longest)
Rank 0 also runs 12 small helpers (train.py:100-111, 5 µs each), more lines than a rank entry keeps.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from .kineto_synth import Synth
from .report_schema import REPORT_SCHEMA
from tests.conftest import run_stepscope
from stepscope.analysis.report import analyze

STEP_US = {0: 1000, 1: 3000, 2: 2000}


def rank_folder(tmp: Path) -> tuple[Path, Path]:
    ws = tmp / "ws"
    ws.mkdir()
    (ws / "train.py").write_text("\n" * 120)
    folder = tmp / "ranks"
    # file names that do not sort like the ranks: the order comes from the traces' distributedInfo
    for rank, name in ((2, "a.json"), (0, "b.json"), (1, "c.json")):
        s = Synth()
        s.metadata = {"distributedInfo": {"rank": rank, "world_size": 3}}
        length = STEP_US[rank]
        for k in range(2):
            t = k * length
            s.step(k + 1, t, length)
            s.frame("train.py", 10, "forward_step", t + 100, 300)
            s.launch(t + 150, t + 200, 300)
            s.frame("train.py", 20, "sync_grads", t + 500, length - 600)
            s.launch(t + 550, t + 600, 100)
            if rank == 0:
                for j in range(12):
                    s.frame("train.py", 100 + j, f"helper{j}", t + 410 + 7 * j, 5)
        s.write(folder / name)
    return folder, ws


def test_each_rank_carries_its_own_figures_and_the_slowest_is_named(tmp_path: Path) -> None:
    folder, ws = rank_folder(tmp_path)
    report = analyze([folder], source_root=ws)
    jsonschema.validate(report, REPORT_SCHEMA)
    ranks = report["ranks"]
    assert [(r["rank"], r["ms_per_step"], r["steps"]) for r in ranks] == [(0, 1.0, 2), (1, 3.0, 2), (2, 2.0, 2)]
    assert [r["trace"] for r in ranks] == [str(folder / n) for n in ("b.json", "c.json", "a.json")]
    assert all(r["gpu_ms"] == pytest.approx(0.4) for r in ranks)  # [200, 500] and [600, 700] per step
    assert report["slowest_rank"] == 1 and [r["slowest"] for r in ranks] == [False, True, False]
    # each rank's top lines, in the per-line shape of the report's lines: rank 1 waits 2.4 ms in sync_grads
    top = {r["rank"]: [(Path(x["file"]).name, x["line"], x["wall_ms"]) for x in r["lines"][:2]] for r in ranks}
    assert top[0] == [("train.py", 20, 0.4), ("train.py", 10, 0.3)]
    assert top[1] == [("train.py", 20, 2.4), ("train.py", 10, 0.3)]
    assert top[2] == [("train.py", 20, 1.4), ("train.py", 10, 0.3)]
    assert ranks[1]["lines"][0]["gpu_ms"] == pytest.approx(0.1) and ranks[1]["lines"][0]["kernels"] == 1
    assert set(ranks[1]["lines"][0]) == set(report["lines"][0])
    # rank 0 ran 14 lines: its entry keeps the 10 longest; the headline keeps them all
    assert len(report["lines"]) == 14 and len(ranks[0]["lines"]) == 10
    assert ranks[0]["lines"] == report["lines"][:10]
    # the headline is rank 0's, and the notes say so and name the slowest
    assert report["machine"]["rank"] == 0 and report["ms_per_step"] == 1.0
    assert any("headline figures" in n and "rank 0's" in n for n in report["notes"])
    # no collectives in these traces: the ranks do not wait for each other, the slowest is the longest step
    assert "the slowest rank is rank 1 (3.000 ms/step against 1.000 on rank 0; no collectives seen)" \
        in " ".join(report["notes"])
    assert report["rank_wait"] is None


def test_the_text_report_has_a_rank_table_with_the_slowest_marked(tmp_path: Path) -> None:
    folder, ws = rank_folder(tmp_path)
    proc = run_stepscope("analyze", str(folder), "--source-root", str(ws), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("1.000 ms/step (median of 2 active steps; mean 1.000 ms)")
    table = proc.stdout.split("ranks (3 traces; the figures below are rank 0's):\n", 1)[1].splitlines()
    assert table[0].split() == ["rank", "ms/step", "steps", "gpu", "ms", "comm", "ms"]
    assert [row.split() for row in table[1:4]] == [  # no collective kernels: 0 ms of them, observed
        ["0", "1.000", "2", "0.400", "0.000"],
        ["1", "3.000", "2", "0.400", "0.000", "<-", "slowest"],
        ["2", "2.000", "2", "0.400", "0.000"],
    ]
    # a folder named relative to the working directory: every trace path in the JSON is absolute
    proc = run_stepscope("analyze", "ranks", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert [r["trace"] for r in report["ranks"]] == [str(folder / n) for n in ("b.json", "c.json", "a.json")]


def test_one_trace_has_no_rank_table(tmp_path: Path) -> None:
    folder, ws = rank_folder(tmp_path)
    report = analyze([folder / "b.json"], source_root=ws)
    assert "ranks" not in report and "slowest_rank" not in report
    assert not any("rank" in n for n in report["notes"])


ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def collective_folder(tmp: Path, all_reduce_us: dict[int, int], *, gpu: bool = True) -> Path:
    """Two ranks, 2 steps of 2 ms each; in each step a 300 µs compute kernel, then an all-reduce whose
    kernel runs `all_reduce_us[rank]` µs (the rank that arrives first waits there for the other)."""
    folder = tmp / "ranks"
    for rank in (0, 1):
        s = Synth()
        s.metadata = {"distributedInfo": {"rank": rank, "world_size": 2}}
        for k in range(2):
            t = k * 2000
            s.step(k + 1, t, 2000)
            s.frame("train.py", 10, "forward_step", t + 100, 300)
            if gpu:
                s.launch(t + 150, t + 200, 300)
                s.launch(t + 600, t + 1900 - all_reduce_us[rank], all_reduce_us[rank], name=ALL_REDUCE, stream=9)
        s.write(folder / f"trace-rank{rank}.json")
    return folder


def test_collective_time_per_rank_and_the_rank_the_others_wait_for(tmp_path: Path) -> None:
    folder = collective_folder(tmp_path, {0: 10, 1: 1400})
    report = analyze([folder])
    jsonschema.validate(report, REPORT_SCHEMA)
    assert [(r["rank"], r["collective_ms"], r["gpu_ms"]) for r in report["ranks"]] == [(0, 0.01, 0.31), (1, 1.4, 1.7)]
    assert report["window"]["collective_ms"] == 0.01  # the headline's (rank 0's) own
    # rank 1 waits in its all-reduce for rank 0: a finding names rank 0, on no line of its own
    finding = next(f for f in report["findings"] if f["kind"] == "rank-imbalance")
    assert "rank 0 0.010 ms, rank 1 1.400 ms" in finding["observation"]
    assert "includes waiting for the other ranks; rank 0 spends the least there" in finding["observation"]
    assert "wait for rank 0" in finding["hypothesis"]
    assert "Compare rank 0's lines with rank 1's" in finding["next_check"]
    assert finding["figures"]["waited_for"] == 0 and finding["figures"]["extra_ms"] == pytest.approx(1.39)

    proc = run_stepscope("analyze", str(folder), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    table = proc.stdout.split("ranks (2 traces; the figures below are rank 0's):\n", 1)[1].splitlines()
    assert table[0].split() == ["rank", "ms/step", "steps", "gpu", "ms", "comm", "ms"]
    # one answer: the rank table marks the rank the others wait for, as the finding names it
    assert table[1].split() == ["0", "2.000", "2", "0.310", "0.010", "<-", "waited", "for"]
    assert table[2].split() == ["1", "2.000", "2", "1.700", "1.400"]
    assert report["slowest_rank"] == 0 and report["rank_wait"]["rank"] == 0 and report["rank_wait"]["by"] == "gpu"


def test_no_rank_imbalance_when_collective_times_are_alike_or_not_observed(tmp_path: Path) -> None:
    alike = analyze([collective_folder(tmp_path / "alike", {0: 500, 1: 560})])
    assert [r["collective_ms"] for r in alike["ranks"]] == [0.5, 0.56]
    assert not any(f["kind"] == "rank-imbalance" for f in alike["findings"])
    # ranks that wait for each other alike: none is called slowest, and the notes say why
    assert alike["slowest_rank"] is None and not any(r["slowest"] for r in alike["ranks"])
    assert any("no rank stands out" in n for n in alike["notes"])
    cpu_only = analyze([collective_folder(tmp_path / "cpu", {0: 10, 1: 1400}, gpu=False)])
    assert [r["collective_ms"] for r in cpu_only["ranks"]] == [None, None]  # not observed, never 0
    assert not any(f["kind"] == "rank-imbalance" for f in cpu_only["findings"])


def test_rank_imbalance_thresholds_come_from_the_workspace_and_bad_values_are_said(tmp_path: Path) -> None:
    folder = collective_folder(tmp_path, {0: 10, 1: 1400})
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "pyproject.toml").write_text('[tool.stepscope.findings]\nrank-wait-min-ms = 5\nrank-wait-ratio = "x"\n')
    report = analyze([folder], source_root=ws)
    assert not any(f["kind"] == "rank-imbalance" for f in report["findings"])  # 1.39 ms < 5 ms
    assert any("rank-wait-ratio = 'x' is not a valid value" in n for n in report["notes"])


def gloo_folder(tmp: Path) -> tuple[Path, Path]:
    """Two CPU ranks (gloo), 3 steps of 40 ms: rank 1 sleeps 30 ms on train.py:15 before its forward;
    each rank's gloo all-reduce runs on a worker thread until both have arrived (rank 0 waits 32 ms there,
    rank 1 2 ms), while its main thread waits in `loss.backward()` (train.py:17)."""
    ws = tmp / "ws"
    ws.mkdir()
    (ws / "train.py").write_text("\n" * 30)
    folder = tmp / "ranks"
    for rank in (0, 1):
        s = Synth(devices=[])
        s.metadata = {"distributedInfo": {"rank": rank, "world_size": 2}}
        for k in range(3):
            t = k * 40_000
            s.step(k + 1, t, 40_000)
            start = t + 100
            if rank == 1:
                s.frame("train.py", 15, "sleep", start, 30_000)
                start += 30_000
            s.frame("train.py", 16, "forward", start, 1_000)
            s.frame("train.py", 17, "backward", start + 1_000, t + 39_000 - start - 1_000)
            s.region("gloo:all_reduce", t + 37_000 - (32_000 if rank == 0 else 2_000), 32_000 if rank == 0 else 2_000,
                     tid=300)
        s.write(folder / f"trace-rank{rank}.json")
    return folder, ws


def test_gloo_ranks_wait_for_the_rank_that_arrives_last_and_its_lines_that_differ_are_named(tmp_path: Path) -> None:
    folder, ws = gloo_folder(tmp_path)
    report = analyze([folder], source_root=ws)
    jsonschema.validate(report, REPORT_SCHEMA)
    assert [(r["rank"], r["collective_ms"], r["host_collective_ms"]) for r in report["ranks"]] == \
        [(0, None, 32.0), (1, None, 2.0)]  # no GPU: GPU collectives unknown; the host's gloo time observed
    assert report["slowest_rank"] == 1 and [r["slowest"] for r in report["ranks"]] == [False, True]
    wait = report["rank_wait"]
    assert wait["by"] == "host" and wait["extra_ms"] == 30.0
    assert [(Path(x["file"]).name, x["line"], x["self_ms"], x["others_ms"]) for x in wait["lines"]] == \
        [("train.py", 15, 30.0, 0.0)]
    f = next(f for f in report["findings"] if f["kind"] == "rank-imbalance")
    assert (Path(f["file"]).name, f["line"]) == ("train.py", 15)
    assert "host time in collective operations (gloo" in f["observation"] and "rank 1 spends the least" in f["observation"]
    assert "train.py:15 30.00 ms per step against 0.00 ms" in f["observation"]
    assert f["figures"]["waited_for"] == 1
    proc = run_stepscope("analyze", str(folder), "--source-root", str(ws), cwd=tmp_path)
    table = proc.stdout.split("ranks (2 traces; the figures below are rank 0's):\n", 1)[1].splitlines()
    assert table[0].split()[-3:] == ["host", "comm", "ms"]
    assert table[2].split() == ["1", "40.000", "3", "n/o", "2.000", "<-", "waited", "for"]
