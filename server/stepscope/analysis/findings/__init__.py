"""Findings: from the report to an observation, a hypothesis and the next check (guide §9).

`find(report, thresholds=Thresholds()) -> list[dict]` is the single entry point; it is a pure
function of the report (its figures, its `evidence` and `missing_labels`, which
`evidence.py` and `missing_labels` add when the report is built). Each finding has the
contract's fields (`kind, file, line, observation, hypothesis, next_check`) plus `severity` and
`figures`; `observation` carries the figures and the machine they come from, the hypothesis is a
possible reading (not a conclusion), and no finding ever claims a speed-up.

Findings whose evidence the profiler distorts (host waits, launch-bound steps, the batch read) say
so with the report's `distortion` and point at `stepscope measure` (distorted.py).

Kinds: profiled-faster, input-bound, host-bound, repeated-copy, small-launches, dominant-op, sync-in-step, startup-cost,
unsteady-window, gpu-not-observed, missing-label, rank-imbalance, recompilation, graph-break (docs/findings.md
describes each). Findings about
the loop as a whole are anchored on the loop header line when the trace has one, else on no line.
"""

from __future__ import annotations

from .common import loop_header
from .compile_rule import graph_break, recompilation
from .distorted import mark_distorted
from .host_rule import host_bound
from .labels_rule import missing_label
from .ranks_rule import rank_imbalance
from .source_labels import missing_labels
from .thresholds import DEFAULT_BATCH_READ_PATTERNS, Thresholds, load_thresholds, thresholds_from_table
from .transfer import repeated_copy, sync_in_step
from .window import gpu_not_observed, profiled_faster, startup_cost, unsteady_window
from .work import dominant_op, input_bound, small_launches

__all__ = ["find", "Thresholds", "load_thresholds", "thresholds_from_table", "missing_labels",
           "DEFAULT_BATCH_READ_PATTERNS", "RULES", "KINDS"]

#: in the order findings are listed: what to look at first comes first
RULES = (gpu_not_observed, profiled_faster, input_bound, host_bound, repeated_copy, sync_in_step, small_launches, dominant_op,
         rank_imbalance, recompilation, unsteady_window, graph_break, startup_cost, missing_label)
KINDS = ("gpu-not-observed", "profiled-faster", "input-bound", "host-bound", "repeated-copy", "sync-in-step", "small-launches",
         "dominant-op", "rank-imbalance", "recompilation", "unsteady-window", "graph-break", "startup-cost",
         "missing-label")


def find(report: dict, thresholds: Thresholds = Thresholds()) -> list[dict]:
    anchor = loop_header(report)
    out: list[dict] = []
    for rule in RULES:
        result = rule(report, thresholds, anchor)
        if isinstance(result, list):
            out.extend(result)
        elif result:
            out.append(result)
    return mark_distorted(out, report)
