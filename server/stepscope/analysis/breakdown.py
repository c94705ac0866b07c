"""Where each step's time went, as parts that add up to the step: the trace panel's stacked bars.

    steps = step_breakdown(spans)   # spans: timeline.SpanTable

Each step lasts from the previous step's completion to its own (steps.py; the first from its CPU
start). Every moment of it counts in exactly one part, the first of these that holds at that moment
(each a union of intervals over every thread or stream, so nested or concurrent events never add):
  gpu_busy    a kernel runs on some stream (collectives included: their time includes waiting);
  copies      no kernel runs, a copy or memset does;
  batch_read  the GPU does neither, and a thread reads a batch (the findings' batch-read patterns);
  host_wait   ... a thread waits in a host synchronisation (links.py's);
  cpu_work    ... a thread runs recorded work: operators, regions, frames, runtime calls;
  other       nothing recorded runs anywhere (Python between recorded events, gaps).

Invariants: the parts of a step add up to its `ms` (to the rounding of 4 decimals, `other` taking
the remainder) and none is negative; `gpu_busy` and `copies` are null, never 0, when the trace holds
no GPU events (their time is not observed, and the GPU parts of the rest are then host time only).
"""

from __future__ import annotations

from array import array

from .timeline import CAT, GPU_COMPUTE, GPU_COPY, SpanTable
from .timeline_kernels import partition

PARTS = ("gpu_busy", "copies", "batch_read", "host_wait", "cpu_work", "other")
_GPU_LEVEL = {**{c: 0 for c in GPU_COMPUTE}, **{c: 1 for c in GPU_COPY}}
_CPU_LEVEL = {CAT["batch_read"]: 2, CAT["sync"]: 3}


def _levels(table: dict[int, int], default: int) -> bytes:
    """A translation table: a category byte to its level (255: not counted)."""
    return bytes(table.get(c, default) if c < 64 else 255 for c in range(256))


_GPU_TABLE = _levels(_GPU_LEVEL, 255)
_CPU_TABLE = _levels(_CPU_LEVEL, 4)


def step_breakdown(spans: SpanTable) -> list[dict]:
    """One entry per step (the window itself for a trace without step markers): its name, `ms` and
    the parts of it, in ms (see the module's invariants)."""
    steps = spans.steps
    if not steps:
        return []
    # tracks are contiguous, CPU threads first
    gpu_track = next((k for k, track in enumerate(spans.tracks) if track.kind == "gpu"), None)
    first_gpu = spans.track.index(gpu_track) if gpu_track is not None else len(spans.track)
    categories = spans.category.tobytes()
    levels = categories[:first_gpu].translate(_CPU_TABLE) + categories[first_gpu:].translate(_GPU_TABLE)
    bounds = array("d", [steps[0].cpu_start] + [s.completion for s in steps])
    # level 255: not counted; a span its parent holds at a level no higher changes nothing: skipped
    times = partition(spans.start, spans.end, levels, len(PARTS) - 1, bounds, spans.parent)
    out = []
    n_levels = len(PARTS) - 1
    for k, step in enumerate(steps):
        figures = [round(us / 1000.0, 4) for us in times[k * n_levels:(k + 1) * n_levels]]
        if not spans.gpu_observed:
            figures[0] = figures[1] = None  # type: ignore[call-overload]
        ms = round(step.ms, 4)
        known = sum(f for f in figures if f is not None)
        parts = dict(zip(PARTS, figures))
        parts["other"] = round(max(0.0, ms - known), 4)
        out.append({"name": step.name, "ms": ms, "parts": parts})
    return out
