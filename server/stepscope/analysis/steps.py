"""Steps and their elapsed time (guide §3: the unit is ms/step, never a sum of events).

Definition (shared/PRODUCT.md): a step *completes* when its CPU span has ended and every GPU
event launched inside that span has ended. A step's duration runs from the previous step's
completion to its own; the first active step's duration runs from its CPU start (it may include
GPU work queued before the window: that is part of the window, not start-up).

GPU events are assigned to the step whose CPU span holds their launch call; unlinked GPU events are
assigned by their own start time to the step whose span, extended to the next step's start, holds it.

A trace without step markers is read as ONE window (`whole_window`): the span of the main thread's
events (first start to last end), completed like a step by the GPU work launched inside it. That
window is not a step: it has no ms/step, and figures over it are per window.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from itertools import compress
from statistics import median

from ..trace import Kind, Trace
from .links import Links


@dataclass(frozen=True)
class Step:
    name: str
    cpu_start: float  # µs
    cpu_end: float
    completion: float  # max(cpu_end, end of GPU work launched in the step)
    ms: float  # elapsed: previous completion -> own completion


def find_steps(trace: Trace, links: Links) -> list[Step]:
    rows = links.step_rows
    if not rows:
        return []
    starts = [trace.ts[r] for r in rows]
    ends = [trace.end(r) for r in rows]
    completion = list(ends)
    for g in links.gpu_rows:
        launch = links.launch_row.get(g)
        if launch is not None:
            t = trace.ts[launch]
            i = bisect.bisect_right(starts, t) - 1
            if i < 0 or t > ends[i]:
                continue
        else:
            t = trace.ts[g]
            i = bisect.bisect_right(starts, t) - 1
            if i < 0:
                continue
            if i == len(rows) - 1 and t > ends[i]:
                continue  # after the last step's span: not launched in the window
        g_end = trace.end(g)
        if g_end > completion[i]:
            completion[i] = g_end
    steps = []
    previous = starts[0]
    for r, s, e, c in zip(rows, starts, ends, completion):
        # completions are monotonic: a step cannot complete before the one before it
        c = max(c, previous)
        steps.append(Step(trace.label(r), s, e, c, (c - previous) / 1000.0))
        previous = c
    return steps


WHOLE_WINDOW = "whole trace (no step markers)"


def whole_window(trace: Trace, links: Links) -> Step | None:
    """The trace as one window, for traces without step markers; None when it spans no time."""
    if links.main_track is not None:
        rows = list(compress(range(len(trace)), map(links.main_track.__eq__, trace.track)))
    else:  # no CPU thread at all (a device-only trace): the span of every event
        rows = range(len(trace))
    if not rows:
        return None
    start = min(map(trace.ts.__getitem__, rows))
    end = max(map(trace.end, rows))
    completion = end
    for g in links.gpu_rows:
        launch = links.launch_row.get(g)
        t = trace.ts[launch] if launch is not None else trace.ts[g]
        if start <= t <= end:
            completion = max(completion, trace.end(g))
    if completion <= start:
        return None
    return Step(WHOLE_WINDOW, start, end, completion, (completion - start) / 1000.0)


_ITERATION_HINT = re.compile(r"^(Optimizer\.step#|enumerate\(DataLoader\)#|## .+ ##$)")


def window_note(trace: Trace, links: Links, window: Step) -> str:
    """What a report says about a trace read as one window, with the repeated iteration-like
    labels of its main thread (named, not used: they mark a point of each iteration, not where a
    step starts and completes)."""
    note = (f"{window.name}: no ProfilerStep#N events, so the trace is read as one window of "
            f"{window.ms:.3f} ms (its main thread's span); per-line, per-op and per-region figures are per "
            "window, not per step, and there is no ms/step")
    counts: dict[str, int] = {}
    for i in trace.rows(Kind.ANNOTATION, Kind.CPU_OP):
        if trace.track[i] == links.main_track:
            name = trace.names[trace.name[i]]
            if _ITERATION_HINT.match(name):
                counts[name] = counts.get(name, 0) + 1
    repeated = sorted(((n, c) for n, c in counts.items() if c > 1), key=lambda nc: (-nc[1], nc[0]))
    if repeated:
        shown = ", ".join(f"{c} x {n}" for n, c in repeated[:3])
        note += (f". Iteration-like labels repeat on the main thread ({shown}): record with a scheduled "
                 "profiler and prof.step() for per-step figures")
    return note


def ms_per_step(steps: list[Step]) -> float:
    return median(s.ms for s in steps)
