"""Clocks of several hosts aligned from the collectives their ranks share, and how well that holds:
synthetic traces with a known skew, contradicting or missing collectives, windows of other steps,
ranks read from file names, and real NCCL traces of eight ranks of one machine.

The synthetic job: 4 ranks, 2 per host (host "a": ranks 0, 1; host "b": ranks 2, 3), 3 steps of
1000 µs. In each step every rank starts an all-reduce kernel when it arrives (rank r at
ARRIVE[r] µs into the step, rank 3 last) and the kernel ends on every rank at the same true moment,
LAST + 50 µs (+ r µs: ends are nearly, not exactly, simultaneous). Host b's clock reads SKEW µs
behind the true time, so its ranks' timestamps need +SKEW to read on host a's clock.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.analysis.clocks import Collectives, RankClock, align, bound
from stepscope.analysis.nodes import rank_from_name
from stepscope.analysis.report import analyze

from .. import corpus
from .kineto_synth import Synth

SKEW = 437.0
ARRIVE = {0: 100.0, 1: 140.0, 2: 120.0, 3: 400.0}
HOST = {0: "a", 1: "a", 2: "b", 3: "b"}
KERNEL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def _job(folder: Path, *, skew: float = SKEW, names: dict[int, str] | None = None, steps_of: dict[int, int] | None = None,
         kernel: str = KERNEL, metadata: bool = True) -> Path:
    last = max(ARRIVE.values())
    for rank in range(4):
        s = Synth()
        if metadata:
            s.metadata = {"distributedInfo": {"rank": rank, "world_size": 4, "backend": "nccl"}, "host_name": HOST[rank]}
        shift = -skew if HOST[rank] == "b" else 0.0  # what this host's clock reads at true time 0
        first = (steps_of or {}).get(rank, 1)
        for k in range(3):
            t = 10_000.0 + 1000.0 * k + shift
            s.step(first + k, t, 900)
            s.launch(t + 10, t + ARRIVE[rank], last + 50 + rank - ARRIVE[rank], name=kernel)
        s.write(folder / (names or {}).get(rank, f"trace-rank{rank}.json"))
    return folder


def test_a_skewed_hosts_clock_is_aligned_within_the_bound_the_collectives_give(tmp_path: Path):
    report = analyze([_job(tmp_path / "job")])
    clocks = report["clocks"]
    assert clocks["method"] == "collectives" and clocks["by"] == "gpu" and clocks["reference_rank"] == 0
    a, b = clocks["hosts"]
    assert (a["host"], a["ranks"], a["offset_us"], a["bound_us"]) == ("a", [0, 1], 0.0, None)
    assert (b["host"], b["ranks"], b["collectives"]) == ("b", [2, 3], 6)
    # the true skew lies inside the bound, and the offset is within the ends' spread of it
    assert b["bound_us"][0] <= SKEW <= b["bound_us"][1]
    assert abs(b["offset_us"] - SKEW) <= 3.0
    assert b["residual_us"] <= 3.0
    # the bound: rank 0 starts at +100 and ends at +450; host b's ranks start at +120 / +400 and end at
    # +452 / +453 (true time): SKEW + 100 - 452 <= θ <= SKEW + 450 - 400
    assert b["bound_us"] == [pytest.approx(SKEW + 100 - 452), pytest.approx(SKEW + 450 - 400)]
    # ranks 0 and 1 share host a's clock: the same bound must hold 0 there
    assert clocks["check"]["holds"] and clocks["check"]["bound_us"][0] <= 0 <= clocks["check"]["bound_us"][1]
    ranks = {e["rank"]: e for e in report["ranks"]}
    assert [ranks[r]["clock_offset_us"] for r in range(4)] == [0.0, 0.0, b["offset_us"], b["offset_us"]]
    # on aligned clocks rank 3 starts each all-reduce ~300 µs after the first rank: the others wait for it
    assert ranks[3]["late_ms"] == pytest.approx(0.3, abs=0.005)
    assert ranks[0]["late_ms"] == pytest.approx(0.0, abs=0.005)
    said = next(n for n in report["notes"] if n.startswith("clocks aligned"))
    assert said == (f"clocks aligned to rank 0's (host a) from the GPU collectives the ranks share: host b "
                    f"{b['offset_us']:+.1f} µs (bounded to [+85.0, +487.0] µs by the collectives; their ends agree to "
                    f"{b['residual_us']:.1f} µs once aligned)")
    # per node (the host here): its ranks, its slowest rank's ms/step, its latest rank's lateness
    assert [(n["node"], n["ranks"], n["clock_offset_us"]) for n in report["nodes"]] == [
        ("a", [0, 1], 0.0), ("b", [2, 3], b["offset_us"])]
    assert report["nodes"][1]["late_ms"] == ranks[3]["late_ms"]
    # a node's ms/step is one rank's own, named apart from the report's slowest_rank (the rank waited for)
    for node in report["nodes"]:
        assert node["longest_step_rank"] in node["ranks"] and "slowest_rank" not in node
        assert node["ms_per_step"] == max(ranks[r]["ms_per_step"] for r in node["ranks"])
        assert node["ms_per_step"] == ranks[node["longest_step_rank"]]["ms_per_step"]


def test_the_text_report_shows_each_node_and_how_the_clocks_were_aligned(tmp_path: Path):
    from stepscope.analysis.render import render_text

    report = analyze([_job(tmp_path / "job")])
    lines = render_text(report).splitlines()
    start = lines.index("nodes (2; each figure is one of its ranks' own):")
    a, b = (line.split() for line in lines[start + 2:start + 4])
    assert (a[0], a[1], a[2], a[-1]) == ("a", "a", "0,1", "+0.0")
    assert (b[0], b[1], b[2], b[-1]) == ("b", "b", "2,3", f"{report['nodes'][1]['clock_offset_us']:+.1f}")
    assert float(b[-2]) == pytest.approx(0.3, abs=0.01)  # host b's latest rank (3) starts its all-reduces late
    assert lines[start + 4] == ("clocks: 2 clocks aligned to rank 0's from shared GPU collectives (each offset bounded "
                                "to an interval at most 402.0 µs wide; see the notes)")


def test_without_alignment_the_skew_would_read_as_lateness(tmp_path: Path):
    # the same job on one clock: nothing to align, and rank 3 is still the one that arrives last
    report = analyze([_job(tmp_path / "job", skew=0.0)])
    ranks = {e["rank"]: e for e in report["ranks"]}
    assert report["clocks"]["hosts"][1]["offset_us"] == pytest.approx(0.0, abs=3.0)
    assert ranks[3]["late_ms"] == pytest.approx(0.3, abs=0.005)


def test_bounds_that_contradict_each_other_align_nothing_and_say_so():
    ref = Collectives("gpu", {"k": [(0.0, 10.0), (100.0, 110.0)]})
    # the second collective would need θ ≥ +80 where the first allows at most +10
    other = Collectives("gpu", {"k": [(0.0, 10.0), (0.0, 20.0)]})
    assert not bound(ref, [other]).holds
    clocks = [RankClock(0, "a", ("ProfilerStep#1",), 1, ref), RankClock(1, "b", ("ProfilerStep#1",), 1, other)]
    section, offsets, late, notes = align(clocks)
    assert section["method"] == "not aligned" and offsets == {0: 0.0, 1: None} and late == {0: None, 1: None}
    assert notes == ["the clock of b is not aligned: its 2 collectives shared with rank 0 contradict each other "
                     "(matched wrongly, or of a group rank 0 is not in)"]


def test_windows_of_other_steps_are_not_matched(tmp_path: Path):
    report = analyze([_job(tmp_path / "job", steps_of={2: 5})])
    assert report["clocks"]["method"] == "not aligned"
    assert all(e["late_ms"] is None for e in report["ranks"])
    assert any("the ranks' windows hold different steps (rank 0: ProfilerStep#1 to ProfilerStep#3;" in n
               and "rank 2: ProfilerStep#5 to ProfilerStep#7" in n for n in report["notes"])


def test_hosts_without_shared_collectives_are_not_compared(tmp_path: Path):
    report = analyze([_job(tmp_path / "job", kernel="void gemm_kernel<float>()")])
    assert report["clocks"]["method"] == "not aligned" and report["clocks"]["by"] is None
    assert [h["offset_us"] for h in report["clocks"]["hosts"]] == [0.0, None]
    assert any(n.startswith("2 hosts, but the traces hold no collective every rank contributes to") for n in
               report["notes"])


@pytest.mark.parametrize(("name", "rank"), [
    ("trace-rank3.json", 3), ("trace-rank12-1.json", 12), ("rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", 0),
    ("sampled_rank-1.json.gz", 1), ("inference_rank_1.json.gz", 1), ("worker7_step_12.1694128201553.pt.trace.json.gz", 7),
    ("host1_rank5.pt.trace.json", 5), ("rank_not_found.json.gz", None), ("trace.json", None), ("ranked3.json", None),
    ("workers.json", None),
])
def test_the_rank_a_file_name_records(name: str, rank: int | None):
    assert rank_from_name(name) == rank


def test_traces_without_distributed_info_take_their_rank_from_their_names(tmp_path: Path):
    names = {0: "job_rank-2.json", 1: "job_rank-0.json", 2: "job_rank-3.json", 3: "job_rank-1.json"}
    report = analyze([_job(tmp_path / "job", names=names, metadata=False)])
    assert [(e["rank"], Path(e["trace"]).name) for e in report["ranks"]] == [
        (0, "job_rank-0.json"), (1, "job_rank-1.json"), (2, "job_rank-2.json"), (3, "job_rank-3.json")]
    assert any(n.startswith("the rank of 4 trace(s) without distributedInfo was read from the file name") for n in
               report["notes"])
    # no host is known: each rank is a clock of its own, and no node is named
    assert len(report["clocks"]["hosts"]) == 4 and "nodes" not in report


def test_eight_ranks_of_one_machine_align_to_within_a_few_microseconds():
    folder = corpus.PUBLIC.parent / "public2" / "param_dlrm_8rank"
    if corpus.HIDDEN or not folder.is_dir():
        pytest.skip(f"the public traces are not here: {folder} (set STEPSCOPE_TEST_TRACES to the folder holding "
                    "public2/)")
    report = analyze([folder])
    clocks = report["clocks"]
    # the traces name no host: each rank is aligned as a clock of its own, from 3 all-reduce kernels
    assert clocks["method"] == "collectives" and clocks["by"] == "gpu"
    assert [h["ranks"] for h in clocks["hosts"]] == [[r] for r in range(8)]
    for host in clocks["hosts"][1:]:
        assert host["collectives"] == 3
        assert host["bound_us"][0] <= host["offset_us"] <= host["bound_us"][1]
        # they ran on one machine, one clock: the alignment finds it, to the ends' few µs of spread
        assert abs(host["offset_us"]) <= 5.0 and host["residual_us"] <= 5.0
    assert any(n.startswith("7 clocks aligned to rank 0's from the GPU collectives the ranks share: offsets from -2.0 "
                            "to +4.0 µs") for n in report["notes"])
