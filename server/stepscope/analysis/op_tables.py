"""The trace panel's operator and kernel tables: figures by name over the active window, per step.

    rows, left_out = operator_table(spans)
    rows, left_out = kernel_table(spans)

Operators (every CPU operator of the window, the batch read's included):
  calls      calls per step;
  self_ms    its self time per step: each call's duration less that of the operators it holds
             (nesting.py's definition);
  total_ms   its time per step including what it calls, outermost calls only (a call inside a call
             of the same name adds nothing), summed over threads (CPU time, like a line's cpu_total);
  gpu_ms     the union of the GPU work launched from inside its calls (the innermost operator holding
             each launch call), per step; null when GPU events were not observed;
  shapes     its most common input shapes with their share of calls, where shapes were recorded;
  file/line  the line with most of its self time (`{fileId, line}`; null where no line holds it).
Kernels (GPU kernels, collectives included, by name):
  launches   launches per step; total_ms: the union of its intervals on every stream, per step;
  mean_us    its mean duration per launch; file/line: the line that launched most of its time.

Invariants: at most `MAX_ROWS` rows per table, by time (the larger of CPU and GPU time for
operators), `left_out` says how many names were not listed; every time is a union of intervals or a
sum of disjoint ones, so nothing counts twice; figures are per step of the window (per window for a
trace without step markers).
"""

from __future__ import annotations

from array import array
from itertools import compress, repeat
from operator import add, mul

from .timeline import GPU_COMPUTE, SpanTable
from .timeline_kernels import group_stats

MAX_ROWS = 500


def _per_step(spans: SpanTable) -> int:
    return max(1, len(spans.steps))


def _where(spans: SpanTable, line: int) -> dict:
    if line < 0:
        return {"file": None, "line": None}
    fid, number = spans.lines[line]
    return {"file": fid, "line": number}


def _best_lines(spans: SpanTable, idx: list[int], values: array) -> dict[int, int]:
    """For each name among spans `idx`, the line (index, -1 for none) with the most of `values`."""
    n_lines = len(spans.lines) + 1
    names = list(map(spans.name.__getitem__, idx))
    keys = array("q", map(add, map(mul, names, repeat(n_lines)), map((1).__add__, map(spans.line.__getitem__, idx))))
    ukeys, _, sums, _ = group_stats(keys, array("d", [0.0]) * len(values), values)
    best: dict[int, tuple[float, int]] = {}
    for key, us in zip(ukeys, sums):
        nid, line = divmod(key, n_lines)
        if nid not in best or us > best[nid][0]:
            best[nid] = (us, line - 1)
    return {nid: line for nid, (_, line) in best.items()}


def operator_table(spans: SpanTable) -> tuple[list[dict], int]:
    n = _per_step(spans)
    idx = list(compress(range(len(spans)), map(spans.is_operator.__getitem__, spans.name))) if spans.is_operator \
        else []
    if not idx:
        return [], 0
    own = array("d", map(spans.own.__getitem__, idx))
    zeros = array("d", [0.0]) * len(idx)
    names = array("q", map(spans.name.__getitem__, idx))
    ukeys, calls, self_us, _ = group_stats(names, zeros, own)
    outer = list(compress(idx, map(spans.outer.__getitem__, idx)))
    t_keys, _, total_us, _ = group_stats(array("q", map(spans.name.__getitem__, outer)),
                                         array("d", map(spans.start.__getitem__, outer)),
                                         array("d", map(spans.end.__getitem__, outer)))
    totals = dict(zip(t_keys, total_us))
    gpu: dict[int, float] = {}
    if spans.gpu_observed:
        launched = list(compress(range(len(spans)), map((-1).__ne__, spans.launch_op)))
        g_keys, _, _, g_union = group_stats(array("q", map(spans.launch_op.__getitem__, launched)),
                                            array("d", map(spans.start.__getitem__, launched)),
                                            array("d", map(spans.end.__getitem__, launched)))
        gpu = dict(zip(g_keys, g_union))
    lines = _best_lines(spans, idx, own)
    rows = []
    for nid, count, us in zip(ukeys, calls, self_us):
        gpu_us = gpu.get(nid, 0.0)
        shapes = spans.shapes.get(nid)
        shape_text = None
        if shapes:
            text_id, shape_calls = shapes.most_common(1)[0]
            shape_text = {"text": spans.names[text_id], "share": round(shape_calls / count, 3)}
        rows.append({
            "name": spans.names[nid],
            "calls": round(count / n, 2),
            "self_ms": round(max(0.0, us) / 1000.0 / n, 4),
            "total_ms": round(totals.get(nid, 0.0) / 1000.0 / n, 4),
            "gpu_ms": round(gpu_us / 1000.0 / n, 4) if spans.gpu_observed else None,
            "shapes": shape_text,
            **_where(spans, lines.get(nid, -1)),
        })
    rows.sort(key=lambda r: (-max(r["total_ms"], r["gpu_ms"] or 0.0), r["name"]))
    return rows[:MAX_ROWS], max(0, len(rows) - MAX_ROWS)


def kernel_table(spans: SpanTable) -> tuple[list[dict], int]:
    if not spans.gpu_observed:
        return [], 0
    n = _per_step(spans)
    idx = list(compress(range(len(spans)), map(GPU_COMPUTE.__contains__, spans.category)))
    if not idx:
        return [], 0
    durations = array("d", map(spans.end.__getitem__, idx))
    starts = array("d", map(spans.start.__getitem__, idx))
    ukeys, counts, sums, unions = group_stats(array("q", map(spans.name.__getitem__, idx)), starts, durations)
    lines = _best_lines(spans, idx, array("d", map(float.__sub__, durations, starts)))
    rows = []
    for nid, count, total, union in zip(ukeys, counts, sums, unions):
        rows.append({
            "name": spans.names[nid],
            "launches": round(count / n, 2),
            "total_ms": round(union / 1000.0 / n, 4),
            "mean_us": round(total / count, 3),
            **_where(spans, lines.get(nid, -1)),
        })
    rows.sort(key=lambda r: (-r["total_ms"], r["name"]))
    return rows[:MAX_ROWS], max(0, len(rows) - MAX_ROWS)

