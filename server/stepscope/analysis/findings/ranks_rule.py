"""rank-imbalance: in a folder of per-rank traces, the ranks wait in collectives for one of them.

Invariants:
- Read with `ranks.waiting_in_collectives`, the one answer to "which rank do the others wait for",
  which the rank table marks too (the report's `rank_wait` gives that rank's lines): each rank's time per step in collectives — GPU collective
  kernels (NCCL/RCCL) where two ranks or more observed them, else the host's collective operations
  (gloo, NCCL's host side) — includes the time it waited there for the other ranks. A collective
  lasts on every rank until the last one arrives, so the rank that spends the least time there is
  the one the others wait for. Fires when the rank that waits most spends at least
  `rank_wait_min_ms` more per step there than that rank, and at least `rank_wait_ratio` times as
  much. Which rank is late is a reading of the figures (the hypothesis says
  why it might be), not a measurement of the wait.
- It names that rank's lines whose wall time exceeds the other ranks' the most, when lines exist.
- In synchronous training every rank's ms/step is about the same (each waits for the others), so
  ms/step is given, not used.
"""

from __future__ import annotations

from pathlib import Path

from ..ranks import waiting_in_collectives
from .common import Anchor, finding, machine_words
from .thresholds import Thresholds

_BY = {"gpu": "GPU time in collective kernels (NCCL/RCCL)", "host": "host time in collective operations (gloo, or "
       "NCCL's host side)"}


def _name(rank: dict) -> str:
    return f"rank {rank['rank']}" if rank.get("rank") is not None else str(rank.get("trace"))


def rank_imbalance(report: dict, t: Thresholds, anchor: Anchor) -> dict | None:
    ranks = report.get("ranks") or []
    # the same answer as the rank table's (ranks.py), with the thresholds given here
    late, measure, compared = waiting_in_collectives(ranks, t.rank_wait_min_ms, t.rank_wait_ratio)
    if late is None:
        return None
    by = "gpu" if measure == "collective_ms" else "host"
    waiting = max(compared, key=lambda r: r[measure])
    wait = report.get("rank_wait") or {}
    if wait.get("rank") != late.get("rank"):
        wait = {}  # the report's rank_wait was read with other thresholds: no lines of that rank
    per_rank = ", ".join(f"{_name(r)} {r[measure]:.3f} ms" for r in compared)
    steps = ", ".join(f"{_name(r)} {r['ms_per_step']:.3f}" for r in ranks if r.get("ms_per_step") is not None)
    lines = wait.get("lines") or []
    differ = ""
    if lines:
        differ = (f" The lines where {_name(late)} spends the most more time than the other ranks (a line's own "
                  "time, without the lines nested in it): "
                  + "; ".join(f"{Path(x['file']).name}:{x['line']} {x['self_ms']:.2f} ms per step against "
                              f"{x['others_ms']:.2f} ms" for x in lines) + ".")
    where = (lines[0]["file"], lines[0]["line"]) if lines else anchor
    return finding(
        "rank-imbalance", where,
        f"Per step, the ranks' {_BY[by]} differs: {per_rank} ({machine_words(report)}). "
        f"This time includes waiting for the other ranks; {_name(late)} spends the least there"
        + (f". ms/step: {steps}." if steps else ".") + differ,
        f"The other ranks reach their collectives first and wait for {_name(late)}: it does more work before them "
        "(more or larger samples, work only it does such as logging, evaluation or checkpointing), or its input "
        "pipeline or device is slower.",
        f"Compare {_name(late)}'s lines with {_name(waiting)}'s (each rank's lines are in ranks[] of the --json "
        "report), above all the work before the gradient all-reduce; then time each rank's step outside the "
        "profiler (several timed passes) to see whether the gap holds.",
        figures={"collective_ms": {str(r.get("rank")): r[measure] for r in compared}, "by": by,
                 "waited_for": late.get("rank"), "extra_ms": round(waiting[measure] - late[measure], 4),
                 "lines": [{"file": x["file"], "line": x["line"], "self_ms": x["self_ms"], "others_ms": x["others_ms"]}
                           for x in lines]},
    )
