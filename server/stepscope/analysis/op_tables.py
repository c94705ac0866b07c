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
  file/line  the line with most of its self time (`{fileId, line}`; null where no line holds it);
  line_calls its calls per step at that line (calls counts every line's: both are said).
Operators by input shapes (only where shapes were recorded; `operator_shape_table`): one row per
operator name and recorded input shapes (`inputs`: the shapes as the trace recorded them, null for
calls with none), with the figures above over that row's calls: calls, self_ms, and total_ms over the
calls no same-named operator holds (so a name's rows add up to its row); GPU time is not split by
shapes (its launches are known by operator name only), so these rows have none.
Kernels (GPU kernels, collectives included, by name):
  launches   launches per step; total_ms: the union of its intervals on every stream, per step;
  mean_us    its mean duration per launch; file/line: the line that launched most of its time;
  line_launches its launches per step from that line.

Invariants: at most `MAX_ROWS` rows per table, by time (the larger of CPU and GPU time for
operators), `left_out` says how many names were not listed; every time is a union of intervals or a
sum of disjoint ones, so nothing counts twice; figures are per step of the window (per window for a
trace without step markers).
"""

from __future__ import annotations

from array import array
from itertools import compress

from .timeline import GPU_COMPUTE, SpanTable
from .timeline_kernels import grouped

MAX_ROWS = 500
_OPERATORS = bytes([0, 1, 1] + [0] * 253)  # `outer` -> 1 for every operator
_OUTERMOST = bytes([0, 0, 1] + [0] * 253)  # `outer` -> 1 for operators no same-named one holds
_KERNELS = bytes(1 if c in GPU_COMPUTE else 0 for c in range(256))  # category -> 1 for kernels


def _per_step(spans: SpanTable) -> int:
    return max(1, len(spans.steps))


def _where(spans: SpanTable, line: int) -> dict:
    if line < 0:
        return {"file": None, "line": None}
    fid, number = spans.lines[line]
    return {"file": fid, "line": number}


def _by_name_and_line(spans: SpanTable, starts: array, ends: array, select: bytes,
                      key: array | None = None) -> dict[int, tuple[int, float, int, int]]:
    """For each name (or `key`, a column aligned with the spans) among the selected spans: how many,
    the sum of their (end - start), the line (index, -1 for none) with the most of it, and how many of
    them that line holds."""
    n_lines = len(spans.lines) + 1
    keys, counts, sums, _ = grouped(spans.name if key is None else key, spans.line, n_lines, starts, ends, select,
                                    unions=False)
    out: dict[int, list] = {}
    for key, count, us in zip(keys, counts, sums):
        nid, line = divmod(key, n_lines)
        entry = out.get(nid)
        if entry is None:
            out[nid] = [count, us, line - 1, us, count]
        else:
            entry[0] += count
            entry[1] += us
            if us > entry[3]:
                entry[2], entry[3], entry[4] = line - 1, us, count
    return {nid: (count, us, line, at_line) for nid, (count, us, line, _, at_line) in out.items()}


def operator_table(spans: SpanTable) -> tuple[list[dict], int]:
    n = _per_step(spans)
    ops = spans.outer.tobytes().translate(_OPERATORS)
    if 1 not in ops:
        return [], 0
    zeros = array("d", bytes(8 * len(spans)))
    figures = _by_name_and_line(spans, zeros, spans.own, ops)
    t_keys, _, total_us, _ = grouped(spans.name, None, 0, spans.start, spans.end,
                                     spans.outer.tobytes().translate(_OUTERMOST), unions=False)
    totals = dict(zip(t_keys, total_us))
    gpu: dict[int, float] = {}
    if spans.gpu_observed:  # GPU spans by the operator that launched them (-1 elsewhere: left out)
        g_keys, _, _, g_union = grouped(spans.launch_op, None, 0, spans.start, spans.end)
        gpu = dict(zip(g_keys, g_union))
    rows = []
    for nid, (count, us, line, at_line) in figures.items():
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
            "gpu_ms": round(gpu.get(nid, 0.0) / 1000.0 / n, 4) if spans.gpu_observed else None,
            "shapes": shape_text,
            **_where(spans, line),
            "line_calls": round(at_line / n, 2) if line >= 0 else None,
        })
    rows.sort(key=lambda r: (-max(r["total_ms"], r["gpu_ms"] or 0.0), r["name"]))
    return rows[:MAX_ROWS], max(0, len(rows) - MAX_ROWS)


def operator_shape_table(spans: SpanTable) -> tuple[list[dict], int] | None:
    """Operators by name and input shapes (see the module's docstring); None where the trace
    recorded no shapes."""
    if spans.input_shapes is None:
        return None
    n = _per_step(spans)
    outer = spans.outer.tobytes()
    ops = outer.translate(_OPERATORS)
    pairs: dict[tuple[int, int], int] = {}
    key = array("i", [-1]) * len(spans)
    name, shapes = spans.name, spans.input_shapes
    for i in compress(range(len(spans)), ops):
        key[i] = pairs.setdefault((name[i], shapes[i]), len(pairs))
    if not pairs:
        return [], 0
    zeros = array("d", bytes(8 * len(spans)))
    figures = _by_name_and_line(spans, zeros, spans.own, ops, key)
    t_keys, _, total_us, _ = grouped(key, None, 0, spans.start, spans.end, outer.translate(_OUTERMOST), unions=False)
    totals = dict(zip(t_keys, total_us))
    rows = []
    for (nid, shape), k in pairs.items():
        count, us, line, at_line = figures[k]
        rows.append({
            "name": spans.names[nid],
            "inputs": spans.names[shape] if shape >= 0 else None,
            "calls": round(count / n, 2),
            "self_ms": round(max(0.0, us) / 1000.0 / n, 4),
            "total_ms": round(totals.get(k, 0.0) / 1000.0 / n, 4),
            **_where(spans, line),
            "line_calls": round(at_line / n, 2) if line >= 0 else None,
        })
    rows.sort(key=lambda r: (-r["total_ms"], -r["self_ms"], r["name"], r["inputs"] or ""))
    return rows[:MAX_ROWS], max(0, len(rows) - MAX_ROWS)


def kernel_table(spans: SpanTable) -> tuple[list[dict], int]:
    if not spans.gpu_observed:
        return [], 0
    n = _per_step(spans)
    kernels = spans.category.tobytes().translate(_KERNELS)
    if 1 not in kernels:
        return [], 0
    names, _, _, unions = grouped(spans.name, None, 0, spans.start, spans.end, kernels)
    figures = _by_name_and_line(spans, spans.start, spans.end, kernels)
    rows = []
    for nid, union in zip(names, unions):
        count, total, line, at_line = figures[nid]
        rows.append({
            "name": spans.names[nid],
            "launches": round(count / n, 2),
            "total_ms": round(union / 1000.0 / n, 4),
            "mean_us": round(total / count, 3),
            **_where(spans, line),
            "line_launches": round(at_line / n, 2) if line >= 0 else None,
        })
    rows.sort(key=lambda r: (-r["total_ms"], r["name"]))
    return rows[:MAX_ROWS], max(0, len(rows) - MAX_ROWS)
