"""A folder of per-rank traces in one report: which rank the headline is, and each rank's own figures.

Invariants:
- Reports are ordered by rank (`machine.rank`, from the trace's `distributedInfo` or the run's
  record); traces without a rank come last, in the order they were read.
- A distributed capture's run folder holds each rank's own file table and scenario record beside its
  trace, named by the run contract (agent/protocol.py); report.py reads each rank's trace with them.
- The headline (top-level figures: ms/step, lines, regions, findings) is the first report in that
  order, the lowest rank, and `notes` says so.
- Every figure of a `ranks[i]` entry is that rank's own, from its own trace: nothing is summed or
  averaged across ranks. `lines` / `regions` are that rank's top `MAX_RANK_LINES` lines / regions by
  wall time, in the shape of the top-level `lines` / `regions`; `gpu_ms` is its GPU busy time per
  step (`null` where its GPU work was not observed), `collective_ms` the part of it in collective
  kernels (NCCL/RCCL), which includes the time the rank waited there for the others (the finding
  `rank-imbalance` reads it: findings/ranks_rule.py).
- The slowest rank is the one with the highest ms/step (ties: the lower rank). When no rank has
  step markers, the window lengths are compared instead; a rank without ms/step is never compared
  with one that has it. Exactly one entry is `slowest` when there is anything to compare.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

MAX_RANK_LINES = 10


def order_by_rank(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reports, lowest rank first, traces without a rank last (a stable sort)."""
    return sorted(reports, key=lambda r: (r["machine"].get("rank") is None, r["machine"].get("rank") or 0))


def _entry(report: dict[str, Any]) -> dict[str, Any]:
    window = report.get("window") or {}
    return {
        "trace": str(Path(report["traces"][0]).resolve()),
        "rank": report["machine"].get("rank"),
        "ms_per_step": report["ms_per_step"],
        "steps": len(report["steps"]),
        "window_ms": window.get("ms"),
        "gpu_ms": window.get("gpu_ms"),
        "collective_ms": window.get("collective_ms"),
        "lines": [dict(line) for line in report["lines"][:MAX_RANK_LINES]],
        # traces recorded without Stepscope or stacks have no lines: their labels still say where time goes
        "regions": [dict(region) for region in report["regions"][:MAX_RANK_LINES]],
        "slowest": False,
    }


def _slowest(entries: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The entry with the highest ms/step (else window length); the first such in rank order."""
    measure = "ms_per_step" if any(e["ms_per_step"] is not None for e in entries) else "window_ms"
    compared = [e for e in entries if e[measure] is not None]
    if len(compared) < 2:
        return None
    return max(compared, key=lambda e: e[measure])  # max keeps the first of equal values: the lower rank


def _rank_name(entry: dict[str, Any]) -> str:
    return f"rank {entry['rank']}" if entry["rank"] is not None else entry["trace"]


def summarize_ranks(reports: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int | None, list[str]]:
    """(`ranks` entries, the slowest rank's id or None, notes) for reports already in rank order."""
    entries = [_entry(r) for r in reports]
    headline = entries[0]
    notes = [f"{len(entries)} rank traces: the headline figures (ms/step, lines, regions, findings) are "
             f"{_rank_name(headline)}'s, the lowest rank; ranks[] holds each rank's own ms/step, GPU time, "
             "top lines and regions"]
    slowest = _slowest(entries)
    if slowest is None:
        return entries, None, notes
    slowest["slowest"] = True
    measure, unit = ("ms_per_step", "ms/step") if slowest["ms_per_step"] is not None else ("window_ms", "ms window")
    said = f"the slowest rank is {_rank_name(slowest)} ({slowest[measure]:.3f} {unit}"
    if slowest is headline:
        notes.append(said + ", the headline's)")
    elif headline[measure] is not None:
        notes.append(said + f" against {headline[measure]:.3f} on {_rank_name(headline)}): its own lines and "
                     "regions are in ranks[]")
    else:
        notes.append(said + "): its own lines and regions are in ranks[]")
    return entries, slowest["rank"], notes
