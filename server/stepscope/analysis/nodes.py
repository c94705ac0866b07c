"""Where each rank ran, and the ranks grouped by node: which rank, node and host each trace of a
folder is, each rank's clock and lateness (clocks.py), and each node's figures.

- rank: the trace's own (`distributedInfo`) or its record's; else, in a folder of several traces,
  read from its file name (`rank_from_name`: the run contract's `-rank<r>`, or a name that says
  `rank<r>`, `rank-<r>`, `rank_<r>` or `worker<r>`, as torchrun, HTA and the profiler's TensorBoard
  handler name them).
- node: the node's index its launcher gave the rank (torchrun's GROUP_RANK, SLURM_NODEID: its
  record's `distributed.node`), else its host's name; None when neither is known.
- host: its record's `machine.host`, else the trace's `host_name`. The host is the clock: ranks of
  one host share theirs.

Invariants:
- Every figure of a node is one of its ranks' own: `ms_per_step` is that of its rank with the longest
  step (named in `longest_step_rank`; not the report's `slowest_rank`, the rank the others wait for), `late_ms` its latest rank's; nothing is summed or averaged across ranks.
- Nodes are listed in the order of their lowest rank; `nodes` is absent when no rank's node or host
  is known.
"""

from __future__ import annotations

import re
from typing import Any

from ..agent.protocol import parse_run_file_name
from .clocks import Collectives, RankClock, align

_RANK_IN_NAME = re.compile(r"(?:^|[^a-z0-9])(?:rank|worker)[-_]?([0-9]+)(?![0-9])", re.IGNORECASE)


def rank_from_name(file_name: str) -> int | None:
    """The rank a trace's file name records, or None."""
    contract = parse_run_file_name(file_name).rank
    if contract is not None:
        return contract
    match = _RANK_IN_NAME.search(file_name)
    return int(match.group(1)) if match else None


def name_ranks(reports: list[dict[str, Any]], names: list[str]) -> list[str]:
    """Give each report without a rank the one its file name (`names`, in the same order) records,
    when that makes every rank of the folder distinct; the notes saying so."""
    missing = [i for i, r in enumerate(reports) if r["machine"].get("rank") is None]
    if not missing:
        return []
    named = {i: rank_from_name(names[i]) for i in missing}
    taken = [r["machine"]["rank"] for r in reports if r["machine"].get("rank") is not None]
    ranks = taken + list(named.values())
    if None in named.values() or len(set(ranks)) != len(ranks):
        return []
    for i, rank in named.items():
        reports[i]["machine"]["rank"] = rank
    return [f"the rank of {len(named)} trace(s) without distributedInfo was read from the file name "
            f"({', '.join(f'{names[i]}: rank {named[i]}' for i in sorted(named))})"]


def _placement(report: dict[str, Any]) -> tuple[str | None, str | None]:
    """(node, host) of a rank's report."""
    machine = report.get("machine") or {}
    host = machine.get("host") if isinstance(machine.get("host"), str) and machine.get("host") else None
    distributed = (report.get("scenario") or {}).get("distributed") or {}
    node = distributed.get("node")
    if isinstance(node, int) and not isinstance(node, bool):
        return str(node), host
    return host, host


def summarize_nodes(reports: list[dict[str, Any]], entries: list[dict[str, Any]],
                    collectives: dict[str, Collectives | None]) -> tuple[list[dict[str, Any]] | None, dict[str, Any],
                                                                        list[str]]:
    """(`nodes` or None, `clocks`, notes) for the reports of a folder in rank order and their `ranks`
    entries (which get `node`, `host`, `clock_offset_us` and `late_ms`); `collectives` by trace path."""
    placed = [_placement(r) for r in reports]
    clocks = [RankClock(rank=e["rank"], host=host, steps=tuple(s["name"] for s in r["steps"]),
                        n_steps=max(len(r["steps"]), 1), collectives=collectives.get(e["trace"]))
              for r, e, (_, host) in zip(reports, entries, placed)]
    section, offsets, late, notes = align(clocks)
    for entry, (node, host), clock in zip(entries, placed, clocks):
        offset = offsets.get(clock.rank)
        entry.update(node=node, host=host, clock_offset_us=round(offset, 1) if offset is not None else None,
                     late_ms=late.get(clock.rank))
    if all(node is None for node, _ in placed):
        return None, section, notes
    groups: dict[str | None, list[dict[str, Any]]] = {}
    for entry in entries:
        groups.setdefault(entry["node"], []).append(entry)
    nodes = []
    for node, members in groups.items():
        timed = [e for e in members if e["ms_per_step"] is not None]
        slowest = max(timed, key=lambda e: e["ms_per_step"]) if timed else None
        lates = [e["late_ms"] for e in members if e["late_ms"] is not None]
        nodes.append({
            "node": node, "host": members[0]["host"], "ranks": [e["rank"] for e in members],
            "ms_per_step": slowest["ms_per_step"] if slowest else None,
            "longest_step_rank": slowest["rank"] if slowest else None,
            "late_ms": max(lates) if len(lates) == len(members) else None,
            "clock_offset_us": members[0]["clock_offset_us"],
        })
    return nodes, section, notes
