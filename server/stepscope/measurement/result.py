"""The measure document (`measure --json`, `measure.json` in the run folder) from what the agents
timed, one record per process.

A process's timings record (what the agent writes, `timings.json`, `timings-1.json`, ...):
    {"warmup_ms": [float], "raw_ms": [float], "values": [float | null] | null, "clock": str,
     "value": str,                # what the values are: the expression read ("loss", "return", `--value`)
     "call_ms": [float | null]}   # a --function step's: each pass's call, start to return
`raw_ms` are the measured passes in order, `warmup_ms` the passes before them.

Invariants:
- Every figure (`median_ms`, `iqr_ms`, p10/p90, min/max, `samples_per_s`, `noisy`) is over all
  measured passes of all processes; warm-up passes are listed (`warmup_ms`, per process in `runs`)
  and enter no figure.
- `mean_ms` is the passes' total / passes: the pace over many steps, which the median is not where
  step times alternate (DataLoader workers delivering batches in bursts: the median falls between
  the waits and the steps that find a batch ready).
- `values` are the first process's; with the same seeds every process computes the same ones, and
  `values_consistent` says whether they did, within the tolerance (None with one process or no
  values).
- `variation` sets run-to-run beside pass-to-pass variation (stats.variation).
- `call` (a `--function` step only, else null): the call itself, from its start (the step's) to its
  return, summarised as the step is, over the passes whose call returned; `share_of_step` is the
  calls' total over those passes' total, so it is never above 1 (a call ends inside its step).

Under a launcher (`ranked_measurement`: each process's timings by rank) a step of the job is as slow
as its slowest rank, so the document's figures — and the comparisons made from it — are of the
slowest rank of each process (the rank with the highest median in that process, the lowest such
rank on a tie): `runs[k]` is that rank's record, `runs[k].rank` names it, and every figure above is
over those records. `values` are the lowest rank's (each rank computes the loss of its own shard;
one rank's stand for the run, as in a training log), so two runs compare the same rank's values.
`ranks` gives each rank's own figures over all its passes (every process), `slowest_rank` the rank
with the highest of those medians. Without ranks, `ranks` and `slowest_rank` are null and
`runs[k].rank` is null.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .compare import DEFAULT_TOLERANCE, check_values
from .stats import median, samples_per_s, summarize, variation


def measurement(processes: Sequence[dict[str, Any]], *, machine: dict, scope: dict,
                tolerance: float = DEFAULT_TOLERANCE) -> dict[str, Any]:
    if not processes or any(not p.get("raw_ms") for p in processes):
        raise ValueError("every process needs measured passes")
    raw = [ms for p in processes for ms in p["raw_ms"]]
    summary = summarize(raw)
    clocks = sorted({p.get("clock") for p in processes if p.get("clock")})
    first_values = processes[0].get("values")
    consistent = None
    if len(processes) > 1 and first_values:
        matches = [check_values(first_values, p.get("values"), tolerance).match for p in processes[1:]]
        consistent = None if None in matches else all(matches)  # None: a process had no values to compare
    return {
        "kind": "measure",
        "machine": machine,
        "scope": scope,
        "clock": "; ".join(clocks) if clocks else None,
        "raw_ms": raw,
        "warmup_ms": [ms for p in processes for ms in p.get("warmup_ms") or []],
        **summary.as_dict(),
        "mean_ms": sum(raw) / len(raw),
        "samples_per_s": samples_per_s(summary.median_ms, scope.get("batch_size")),
        "values": first_values,
        "value": processes[0].get("value") or scope.get("value") or "loss",
        "values_consistent": consistent,
        "runs": [{"raw_ms": list(p["raw_ms"]), "warmup_ms": list(p.get("warmup_ms") or []),
                  **{k: v for k, v in summarize(p["raw_ms"]).as_dict().items() if k != "passes"},
                  "values": p.get("values"), "clock": p.get("clock"), "rank": None} for p in processes],
        "variation": variation([p["raw_ms"] for p in processes]).as_dict(),
        "call": call_summary(processes),
        "ranks": None,
        "slowest_rank": None,
        "values_rank": None,
    }


def ranked_measurement(processes: Sequence[Mapping[int | None, dict[str, Any]]], *, machine: dict, scope: dict,
                       tolerance: float = DEFAULT_TOLERANCE) -> dict[str, Any]:
    """The measure document of processes given as their timings by rank (`{None: timings}` for a
    process without a rank): `measurement` of the slowest rank of each process, with each rank's
    own figures (see the module's invariants)."""
    if not processes or any(not p for p in processes):
        raise ValueError("every process needs measured passes")
    if all(set(p) == {None} for p in processes):
        return measurement([p[None] for p in processes], machine=machine, scope=scope, tolerance=tolerance)
    if any(None in p for p in processes):
        raise ValueError("a process without a rank among ranked ones")
    for process in processes:
        if any(not timings.get("raw_ms") for timings in process.values()):
            raise ValueError("every rank needs measured passes")
    values_rank = min(processes[0])
    slowest = [max(sorted(p), key=lambda rank, p=p: median(p[rank]["raw_ms"])) for p in processes]
    doc = measurement([{**p[rank], "values": (p.get(values_rank) or {}).get("values")}
                       for p, rank in zip(processes, slowest)], machine=machine, scope=scope, tolerance=tolerance)
    for run, rank in zip(doc["runs"], slowest):
        run["rank"] = rank
    ranks = [_rank_figures(rank, [p[rank] for p in processes if rank in p])
             for rank in sorted({rank for p in processes for rank in p})]
    doc["slowest_rank"] = max(ranks, key=lambda entry: entry["median_ms"])["rank"]
    for entry in ranks:
        entry["slowest"] = entry["rank"] == doc["slowest_rank"]
    doc["ranks"] = ranks
    doc["values_rank"] = values_rank
    return doc


def _rank_figures(rank: int, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One rank's figures over its passes of every process (its values: its first process's)."""
    raw = [ms for record in records for ms in record["raw_ms"]]
    return {"rank": rank, **summarize(raw).as_dict(), "mean_ms": sum(raw) / len(raw), "raw_ms": raw,
            "run_medians_ms": [median(record["raw_ms"]) for record in records],
            "values": records[0].get("values")}


def call_summary(processes: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """A `--function` step's calls apart from the time between them (None for a loop's step, or
    when no call returned within its step)."""
    pairs = [(call, step) for p in processes if p.get("call_ms") is not None
             for call, step in zip(p["call_ms"], p["raw_ms"]) if call is not None and call <= step]
    if not pairs:
        return None
    calls = [call for call, _ in pairs]
    steps_total = sum(step for _, step in pairs)
    return {**summarize(calls).as_dict(), "mean_ms": sum(calls) / len(calls), "raw_ms": calls,
            "share_of_step": sum(calls) / steps_total if steps_total > 0 else None}
