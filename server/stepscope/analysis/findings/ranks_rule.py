"""rank-imbalance: in a folder of per-rank traces, the ranks wait in collectives for one of them.

Invariants:
- Read only from `ranks[].collective_ms`: each rank's own GPU time per step in collective kernels
  (NCCL/RCCL), which includes the time the kernel waited for the other ranks. Needs two ranks or
  more with that figure observed (null, on a rank whose GPU work was not observed, is never 0).
- A collective runs on every rank until the last one arrives, so the rank that spends the least time
  there is the one the others wait for. Fires when the rank that waits most spends at least
  `rank_wait_min_ms` more per step there than that rank, and at least `rank_wait_ratio` times as
  much. Which rank is late is a reading of the figures (the hypothesis says why it might be), not a
  measurement of the wait.
- In synchronous training every rank's ms/step is about the same (each waits for the others), so
  ms/step is given, not used.
"""

from __future__ import annotations

from .common import Anchor, finding, machine_words
from .thresholds import Thresholds


def _name(rank: dict) -> str:
    return f"rank {rank['rank']}" if rank.get("rank") is not None else str(rank.get("trace"))


def rank_imbalance(report: dict, t: Thresholds, anchor: Anchor) -> dict | None:
    ranks = [r for r in report.get("ranks") or [] if isinstance(r.get("collective_ms"), (int, float))]
    if len(ranks) < 2:
        return None
    late = min(ranks, key=lambda r: r["collective_ms"])  # min keeps the first: the lower rank
    waiting = max(ranks, key=lambda r: r["collective_ms"])
    extra = waiting["collective_ms"] - late["collective_ms"]
    if extra < t.rank_wait_min_ms or waiting["collective_ms"] < t.rank_wait_ratio * late["collective_ms"]:
        return None
    per_rank = ", ".join(f"{_name(r)} {r['collective_ms']:.3f} ms" for r in ranks)
    steps = ", ".join(f"{_name(r)} {r['ms_per_step']:.3f}" for r in ranks if r.get("ms_per_step") is not None)
    return finding(
        "rank-imbalance", anchor,
        f"Per step, the ranks' GPU time in collective kernels (NCCL/RCCL) differs: {per_rank} ({machine_words(report)}). "
        f"This time includes waiting for the other ranks; {_name(late)} spends the least there"
        + (f". ms/step: {steps}." if steps else "."),
        f"The other ranks reach their collectives first and wait for {_name(late)}: it does more work before them "
        "(more or larger samples, work only it does such as logging, evaluation or checkpointing), or its input "
        "pipeline or device is slower.",
        f"Compare {_name(late)}'s lines with {_name(waiting)}'s (each rank's lines are in ranks[] of the --json "
        "report), above all the work before the gradient all-reduce; then time each rank's step outside the "
        "profiler (several timed passes) to see whether the gap holds.",
        figures={"collective_ms": {str(r.get("rank")): r["collective_ms"] for r in ranks},
                 "waited_for": late.get("rank"), "extra_ms": round(extra, 4)},
    )
