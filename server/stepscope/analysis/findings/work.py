"""Findings about where the step's work goes: input-bound, dominant-op, small-launches.

Invariants:
- Shares are per-step figures (unions of intervals ÷ active steps) over the mean active step
  (`common.basis`); nothing is summed across nested events. On a trace without step markers,
  input-bound and dominant-op need no steps: their figures are per window, and they say so.
- On a run with GPU events, input-bound looks at GPU idle time during the batch read; without
  them it only says how much of the step the read holds, and says that GPU time was not observed.
  It sits on the statement that holds the read (evidence.py), wherever it is.
- dominant-op names only an operator that computes (`op_roles.op_role` "compute"): copies, read-backs,
  collectives and wrappers are waits or containers, never operators to re-implement. It compares
  the operator's CPU self time at the line it runs most on, or the GPU time of the work it launched,
  whichever is larger, to the step; operators inside the batch read are left to input-bound.
- small-launches needs GPU events and steps: kernel counts and durations are never guessed from CPU
  events, and a count per window says nothing about one per step.
- Backward work is the forward line's that recorded it (host_work.py): small-launches' line is the
  one causing the most kernels, backward ones included, and dominant-op counts an operator's calls in
  a backward op at the forward line; both say how many of them are backward ones.
"""

from __future__ import annotations

from ...textsafe import shorten
from ..present import bounded_share, region_name, share_percent
from .common import Anchor, basis, finding, machine_words, placed, where_words
from .thresholds import Thresholds
from .window import gpu_expected


def window_words(per: str) -> str:
    """What a finding on a trace without steps says about its figures."""
    return " (The trace has no step markers: figures are per window.)" if per == "window" else ""


def named_regions(report: dict, labels: list[str]) -> list[str]:
    """Event names as the reader knows them: a Stepscope region by its line (present.region_name)."""
    regions = {r.get("label"): r for r in report.get("regions") or []}
    root = report.get("source_root")
    return [region_name(label, (regions.get(label) or {}).get("file"), (regions.get(label) or {}).get("line"), root)
            for label in labels]


def input_bound(report: dict, t: Thresholds, anchor: Anchor) -> dict | None:
    evidence = report.get("evidence") or {}
    read = evidence.get("batch_read") or {}
    on = basis(report, window=True)
    read_ms = read.get("ms") or 0.0
    if on is None or read_ms <= 0:
        return None
    step = on.ms
    signals = ", ".join(shorten(name) for name in named_regions(report, read.get("signals") or [])) or "batch-read events"
    gpu_observed = (report.get("gpu") or {}).get("observed")
    where, precision = placed(read, anchor, evidence)
    figures = {"read_ms": read_ms, "step_ms": step, "per": on.per, "signals": read.get("signals") or []}
    if gpu_observed and read.get("gpu_busy_ms") is not None:
        idle = max(0.0, read_ms - read["gpu_busy_ms"])
        if idle < t.input_gpu_idle_share * step:
            return None
        figures.update(gpu_busy_during_read_ms=read["gpu_busy_ms"], gpu_idle_during_read_ms=round(idle, 4))
        observation = (f"The batch read ({signals}) takes {read_ms:.2f} ms per {on.per}, and the GPU is idle for "
                       f"{idle:.2f} ms of it ({on.share(idle)}; {machine_words(report)}).")
    else:
        if read_ms < t.input_cpu_share * step:
            return None
        # only a program that used a GPU can have left one waiting
        unknown = " GPU activity was not observed, so whether a GPU waited is unknown." if gpu_expected(report) else ""
        observation = (f"The batch read ({signals}) takes {read_ms:.2f} ms of {on.words()} "
                       f"({share_percent(read_ms / step)}; {machine_words(report)}).{unknown}")
    return finding(
        "input-bound", where, observation + precision + window_words(on.per),
        "The input pipeline cannot keep up with the step (reading, decoding or collating in the main process). "
        "A long wait in the read points at the pipeline; it does not measure the storage itself.",
        "Run the same computation with a batch prepared in advance (read one batch before the loop and reuse it) "
        "and compare ms/step outside the profiler (same warm-up, several timed passes); if it drops, try DataLoader workers, prefetching or pinned memory.",
        figures=figures,
    )


def dominant_op(report: dict, t: Thresholds, anchor: Anchor) -> dict | None:
    evidence = report.get("evidence") or {}
    # an operator that waits, copies, communicates or wraps other work is no algorithm to replace
    ops = [o for o in evidence.get("ops") or [] if o.get("role", "compute") == "compute"]
    on = basis(report, window=True)
    if not ops or on is None:
        return None
    step = on.ms

    def own_at_line(o: dict) -> float:
        return o.get("line_self_ms", o.get("self_ms")) or 0.0

    top = max(ops, key=lambda o: max(own_at_line(o), o.get("gpu_ms") or 0.0))
    gpu = top.get("gpu_ms") or 0.0
    cpu = own_at_line(top)
    own = max(cpu, gpu)
    if own < t.dominant_op_share * step:
        return None
    calls = top.get("line_count", top.get("count"))
    if gpu >= cpu:
        which = f"{gpu:.2f} ms of GPU work launched from it per {on.per} ({on.share(gpu)})"
    else:
        which = f"{cpu:.2f} ms of CPU self time per {on.per} ({on.share(cpu)})"
    elsewhere = ""
    others = (top.get("count") or 0.0) - (calls or 0.0)
    if top.get("file") and others > 0.005:
        elsewhere = (f"; on other lines it runs {others:g} more time(s) per {on.per}, "
                     f"{max(0.0, (top.get('self_ms') or 0.0) - cpu):.2f} ms of CPU self time")
    where, precision = placed(top, (None, None), evidence)
    backward = top.get("line_backward_count") or 0
    # backward work counts on the forward line that recorded it (evidence.py), and is said so
    in_backward = f" ({backward:g} of them in the backward it records)" if backward and top.get("file") else ""
    return finding(
        "dominant-op", where,
        f"{shorten(top['name'])} holds {which}, in {calls:g} call(s) per {on.per}{where_words(top, report.get('source_root'))}"
        f"{in_backward}{elsewhere} "
        f"({machine_words(report)})." + precision + window_words(on.per),
        "A decisive shape or algorithm choice for this operator sets the step's time; the call count may also be "
        "higher than intended.",
        "Before replacing it, profile again with --shapes to see its input shapes and call count, then compare the "
        "same operator on the same inputs in isolation (another algorithm, dtype or layout) and check the outputs.",
        figures={"op": top["name"], "self_ms": cpu, "gpu_ms": top.get("gpu_ms"), "count": calls,
                 "all_lines_self_ms": top.get("self_ms"), "all_lines_count": top.get("count"),
                 "share": round(bounded_share(own / step), 4), "step_ms": step, "per": on.per},
    )


def _replayed_words(k: dict) -> str:
    if not k.get("graph_launches"):
        return ""
    return (f" ({k['graph_kernels']:g} of them replayed by {k['graph_launches']:g} CUDA graph launch(es): "
            f"{k['launches']:g} launches in all)")


def _backward_words(k: dict) -> str:
    """` (40 of them in the backward its operations recorded)`: backward kernels are the forward line's."""
    backward = k.get("top_line_backward_kernels") or 0
    return f" ({backward:g} of them in the backward its operations recorded)" if backward else ""


def _small_launches_check(report: dict) -> str:
    """What to try next; a step that already runs compiled code is not told to compile it."""
    compiled = ((report.get("scenario") or {}).get("torch_compile") or {}).get("compiled_step") is True
    group = ("Examine grouping: batch the small tensors into one (torch._foreach_* or fused optimizer options, one "
             "larger tensor instead of many), ")
    capture = ("or, since the step already runs compiled code, replay it as CUDA graphs (torch.compile's "
               "mode=\"reduce-overhead\") and compile what still runs eager around it (the loss, the optimizer "
               "step); " if compiled else "or capture the step with CUDA graphs / torch.compile; ")
    return (group + capture + "then compare ms/step outside the profiler (same warm-up, several timed passes) and "
            "check the outputs.")


def small_launches(report: dict, t: Thresholds, anchor: Anchor) -> dict | None:
    evidence = report.get("evidence") or {}
    k = evidence.get("kernels")
    on = basis(report)  # kernels per step: needs steps
    if not k or on is None or k.get("median_us") is None:
        return None
    step = on.ms
    busy_share = (k.get("gpu_busy_ms") or 0.0) / step
    # a CUDA graph replays its kernels from one launch: launches, not kernels, carry the overhead
    launches = k.get("launches", k["count"])
    if launches < t.small_launches_min_kernels or k["median_us"] > t.small_kernel_us \
            or busy_share > t.small_launches_max_gpu_busy:
        return None
    where, precision = placed(k, anchor, evidence)
    return finding(
        "small-launches", where,
        f"{k['count']:g} kernels per step{_replayed_words(k)} with a median of {k['median_us']:.1f} µs (p90 "
        f"{k['p90_us']:.1f} µs); the GPU is busy {k['gpu_busy_ms']:.2f} ms of {on.words()} ({share_percent(busy_share)}) while "
        f"launch calls take {k['launch_ms']:.2f} ms on the host"
        + (f"; {k['top_line_kernels']:g} kernels per step come from this line{_backward_words(k)}" if k.get("file") else "")
        + f" ({machine_words(report)})." + precision,
        "The work is fragmented: per-launch overhead, not the kernels, sets the step's time.",
        _small_launches_check(report),
        figures={"kernels_per_step": k["count"], "median_kernel_us": k["median_us"], "p90_kernel_us": k["p90_us"],
                 "gpu_busy_ms": k["gpu_busy_ms"], "launch_ms": k["launch_ms"], "step_ms": step},
    )
