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
  `host_collective_ms` is its time per step in collective operations on the host (gloo's, NCCL's
  host side), which for gloo includes the wait too.
- One answer for "the slowest rank": when the ranks wait for each other in collectives (GPU
  collective kernels on two ranks or more, else host collective operations), it is the rank the
  others wait for — the one that spends the least time in them, since a collective lasts on every
  rank until the last one arrives — and only when the difference passes the rank-imbalance
  thresholds; below them no rank stands out (ranks that synchronise have about the same ms/step,
  and the higher one is noise). Without collectives (ranks that do not wait for each other), it is
  the rank with the highest ms/step (ties: the lower rank), or, when no rank has step markers, the
  longest window; a rank without ms/step is never compared with one that has it. At most one entry
  is `slowest`; `slowest_rank`, the rank table's mark and the rank-imbalance finding say the same.
- `rank_wait` (when a rank is waited for) holds that rank, what its time was read from, each rank's
  time in collectives, and that rank's lines whose own time (self) exceeds the other ranks' (median)
  the most: where it does more work before the collective.
"""

from __future__ import annotations

from pathlib import Path
from statistics import median
from typing import Any

MAX_RANK_LINES = 10
#: the waited-for rank's lines shown in `rank_wait` (those it spends most more time on than the others)
MAX_WAIT_LINES = 3


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
        "host_collective_ms": window.get("host_collective_ms"),
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


def ranks_distinct(entries: list[dict[str, Any]]) -> bool:
    """Whether every trace has a rank of its own (no rank claimed twice, at most one unknown)."""
    return len({e["rank"] for e in entries}) == len(entries)


def _not_distinct(entries: list[dict[str, Any]]) -> str:
    by_rank: dict[Any, list[str]] = {}
    for e in entries:
        by_rank.setdefault(e["rank"], []).append(Path(e["trace"]).name)
    shared = "; ".join(f"{'unknown' if rank is None else f'rank {rank}'}: {', '.join(names)}"
                       for rank, names in by_rank.items() if len(names) > 1)
    return (f"the traces' ranks are not distinct ({shared}): they may be several runs or cycles of one rank, so "
            "each is listed in ranks[] by its trace, and no rank is said to wait for another nor any clock aligned")


def _rank_name(entry: dict[str, Any]) -> str:
    return f"rank {entry['rank']}" if entry["rank"] is not None else entry["trace"]


#: where a rank's time in collectives is read from, in order of preference, and how it is said
_COLLECTIVE_MEASURES = (("collective_ms", "gpu", "collective kernels on the GPU"),
                        ("host_collective_ms", "host", "collective operations on the host"))


def waiting_in_collectives(entries: list[dict[str, Any]], rank_wait_min_ms: float, rank_wait_ratio: float
                           ) -> tuple[dict[str, Any] | None, str | None, list[dict[str, Any]]]:
    """(the rank the others wait for or None, the measure it was read from or None, the entries compared).
    The measure is the first of `_COLLECTIVE_MEASURES` that two ranks or more observed with some time in
    it; the rank is named only when the rank that waits most spends `rank_wait_min_ms` more there and
    `rank_wait_ratio` times as much."""
    for measure, by, _ in _COLLECTIVE_MEASURES:
        compared = [e for e in entries if isinstance(e.get(measure), (int, float))]
        if len(compared) < 2 or not any(e[measure] > 0 for e in compared):
            continue
        late = min(compared, key=lambda e: e[measure])  # min keeps the first: the lower rank
        waiting = max(compared, key=lambda e: e[measure])
        extra = waiting[measure] - late[measure]
        if extra >= rank_wait_min_ms and waiting[measure] >= rank_wait_ratio * late[measure]:
            return late, measure, compared
        return None, measure, compared
    return None, None, []


def _differing_lines(own: dict[str, Any], others: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lines where the waited-for rank (`own`, its report) spends the most more time per step than
    the other ranks (their median; a line a rank did not run counts 0 there). A line's own time (self:
    not counting the lines nested in it) is compared, so an `if` and the statement inside it are not
    both named for the same work."""

    def selves(report: dict[str, Any]) -> dict[tuple, float]:
        return {(line["file"], line["line"]): line["cpu_self_ms"] for line in report["lines"]}

    other_selves = [selves(r) for r in others]
    out = []
    for key, own_ms in selves(own).items():
        theirs = median([w.get(key, 0.0) for w in other_selves]) if other_selves else 0.0
        if own_ms - theirs > 0:
            out.append({"file": key[0], "line": key[1], "self_ms": own_ms, "others_ms": round(theirs, 4)})
    out.sort(key=lambda d: (-(d["self_ms"] - d["others_ms"]), d["file"], d["line"]))
    if out:  # lines that differ by a tenth of the largest difference or less are noise beside it
        top = out[0]["self_ms"] - out[0]["others_ms"]
        out = [d for d in out if d["self_ms"] - d["others_ms"] > 0.1 * top]
    return out[:MAX_WAIT_LINES]


def summarize_ranks(reports: list[dict[str, Any]], thresholds: Any = None
                    ) -> tuple[list[dict[str, Any]], int | None, dict[str, Any] | None, list[str]]:
    """(`ranks` entries, the slowest rank's id or None, `rank_wait` or None, notes) for reports already
    in rank order. `thresholds` (findings.Thresholds) gives the rank-imbalance thresholds."""
    min_ms = getattr(thresholds, "rank_wait_min_ms", 0.1)
    ratio = getattr(thresholds, "rank_wait_ratio", 2.0)
    entries = [_entry(r) for r in reports]
    headline = entries[0]
    notes = [f"{len(entries)} rank traces: the headline figures (ms/step, lines, regions, findings) are "
             f"{_rank_name(headline)}'s, the lowest rank; ranks[] holds each rank's own ms/step, GPU time, "
             "top lines and regions"]
    if not ranks_distinct(entries):
        notes.append(_not_distinct(entries))
        late, measure, compared = None, None, []
    else:
        late, measure, compared = waiting_in_collectives(entries, min_ms, ratio)
    if measure is not None:
        said = next(words for m, _, words in _COLLECTIVE_MEASURES if m == measure)
        if late is None:
            notes.append(f"the ranks spend about the same time per step in {said} (within the rank-imbalance "
                         "thresholds): no rank stands out as the one the others wait for, and their ms/step "
                         "differ only as ranks that wait for each other do")
            return entries, None, None, notes
        late["slowest"] = True
        most = max(compared, key=lambda e: e[measure])
        notes.append(f"the ranks wait for {_rank_name(late)}: it spends the least time per step in {said} "
                     f"({late[measure]:.3f} ms against {most[measure]:.3f} ms on {_rank_name(most)}); a collective "
                     "lasts on every rank until the last one arrives. Its lines are in ranks[]")
        wait = {"rank": late["rank"], "by": next(by for m, by, _ in _COLLECTIVE_MEASURES if m == measure),
                "collective_ms": {str(e["rank"]): e[measure] for e in compared},
                "extra_ms": round(most[measure] - late[measure], 4),
                "lines": _differing_lines(reports[entries.index(late)],
                                          [r for r, e in zip(reports, entries) if e is not late])}
        return entries, late["rank"], wait, notes
    slowest = _slowest(entries)
    if slowest is None:
        return entries, None, None, notes
    slowest["slowest"] = True
    measure, unit = ("ms_per_step", "ms/step") if slowest["ms_per_step"] is not None else ("window_ms", "ms window")
    said = f"the slowest rank is {_rank_name(slowest)} ({slowest[measure]:.3f} {unit}"
    if slowest is headline:
        notes.append(said + ", the headline's; no collectives seen)")
    elif headline[measure] is not None:
        notes.append(said + f" against {headline[measure]:.3f} on {_rank_name(headline)}; no collectives seen): "
                     "its own lines and regions are in ranks[]")
    else:
        notes.append(said + "; no collectives seen): its own lines and regions are in ranks[]")
    return entries, slowest["rank"], None, notes
