"""Steps and their elapsed time (guide §3: the unit is ms/step, never a sum of events).

Definition: a step *completes* when its CPU span has ended and every GPU
event launched inside that span has ended. A step's duration runs from the previous step's
completion to its own; the first active step's duration runs from its CPU start (it may include
GPU work queued before the window: that is part of the window, not start-up).

Completions are monotonic: a step never completes before the one before it, so no step lasts less
than 0 ms. A CPU marker that starts inside the step before it and completes no later than it (a
doubled or broken marker: the same `ts`, or a span inside the other's) is no step of its own: it is
part of the step before it (`absorbed` names it). A step whose span follows the one before it but
whose GPU work ended first lasts 0 ms: a real iteration, done in the shadow of the one before.
`step_notes` says both, naming the markers.

GPU events are assigned to the step whose CPU span holds their launch call; unlinked GPU events are
assigned by their own start time to the step whose span, extended to the next step's start, holds it.

Steps marked only on a GPU stream (`gpu_user_annotation` `ProfilerStep#N`, no CPU marker in the
trace; `gpu_marker_steps`): a step's GPU span runs from the earliest start to the latest end of its
marker's events (one per stream). Kineto draws that span over the work whose innermost label is the
step, launched from the step's thread, so a step also owns the GPU work that starts after its span
starts and before the next step's span starts (the last step: all later work). The step completes
when its span and its work have ended (made monotonic); its duration runs from the previous step's
completion, the first step's from its host start. Host bounds are not recorded: `cpu_start`/`cpu_end`
are the first and last launch calls of the step's work (its GPU start where none is linked), so host
work of the first step before its first launch is outside the window, and a step's CPU time is
unknown (`from_gpu_markers`).

A trace without step markers is read as ONE window (`whole_window`): the span of the main thread's
events (first start to last end), completed like a step by the GPU work launched inside it. That
window is not a step: it has no ms/step, and figures over it are per window.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, replace
from itertools import compress
from statistics import median

from ..textsafe import shorten
from ..trace import Kind, Trace
from .links import Links


@dataclass(frozen=True)
class Step:
    name: str
    cpu_start: float  # µs
    cpu_end: float
    completion: float  # max(cpu_end, end of GPU work launched in the step)
    ms: float  # elapsed: previous completion -> own completion
    #: steps read from GPU-stream markers: cpu_start/cpu_end are launch bounds, not a recorded CPU span
    from_gpu_markers: bool = False
    #: the markers that completed no later than this step, counted as part of it (their labels)
    absorbed: tuple[str, ...] = ()


def _absorb(step: Step, label: str) -> Step:
    return replace(step, absorbed=step.absorbed + (label,))


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
    steps: list[Step] = []
    previous = starts[0]
    for r, s, e, c in zip(rows, starts, ends, completion):
        if steps and s < steps[-1].cpu_end and c <= previous:  # a marker inside the step before it
            steps[-1] = _absorb(steps[-1], trace.label(r))
            continue
        # completions are monotonic: a step cannot complete before the one before it
        c = max(c, previous)
        steps.append(Step(trace.label(r), s, e, c, (c - previous) / 1000.0))
        previous = c
    return steps


def gpu_marker_steps(trace: Trace, links: Links) -> list[Step]:
    """Steps from `ProfilerStep#N` markers drawn on GPU streams (see the module's docstring)."""
    spans: dict[str, list[float]] = {}  # label -> [GPU start, GPU end] over every stream
    for r in links.gpu_step_rows:
        span = spans.setdefault(trace.label(r), [trace.ts[r], trace.end(r)])
        span[0] = min(span[0], trace.ts[r])
        span[1] = max(span[1], trace.end(r))
    ordered = sorted(spans.items(), key=lambda kv: (kv[1][0], kv[1][1]))
    span_starts = [g0 for _, (g0, _) in ordered]
    # a marker spans only the work whose innermost label it is, launched from its own thread: work under
    # a nested label (Optimizer.step#...) or from the autograd thread runs after it, before the next step
    owned: list[list[int]] = [[] for _ in ordered]
    for g in links.gpu_rows:
        k = bisect.bisect_right(span_starts, trace.ts[g]) - 1
        if k >= 0:
            owned[k].append(g)
    steps: list[Step] = []
    for (label, (g0, g1)), rows in zip(ordered, owned):
        launches = [links.launch_row[g] for g in rows if g in links.launch_row]
        start = min([g0] + [trace.ts[r] for r in launches])
        host_end = max([start] + [trace.end(r) for r in launches])
        completion = max([g1] + [trace.end(g) for g in rows])
        if steps:  # host starts and completions are monotonic, like those of CPU-marked steps
            start = max(start, steps[-1].cpu_start)
            completion = max(completion, steps[-1].completion)
        begin = steps[-1].completion if steps else start
        steps.append(Step(label, start, max(host_end, start), completion, (completion - begin) / 1000.0, True))
    return steps


GPU_MARKERS_NOTE = ("steps were taken from the ProfilerStep#N markers on the GPU stream (gpu_user_annotation): "
                    "no CPU thread holds one. A step completes when its GPU span and the GPU work that starts "
                    "after it, up to the next step's span, have ended, and lasts from the previous step's "
                    "completion; each step's CPU time is unknown (cpu_ms null), and host work of the first step "
                    "before its first launch is outside the window")


def step_notes(steps: list[Step]) -> list[str]:
    """What the report says of markers counted as part of the step before them, and of steps of 0 ms
    (none of either: no note)."""
    notes = []
    held = [(s.name, s.absorbed) for s in steps if s.absorbed]
    if held:
        count = sum(len(absorbed) for _, absorbed in held)
        shown = "; ".join(f"{', '.join(shorten(a) for a in absorbed[:3])}{' and more' if len(absorbed) > 3 else ''} "
                          f"with {shorten(name)}" for name, absorbed in held[:3])
        notes.append(f"{count} step marker(s) start inside the step before them and complete no later than it "
                     f"(doubled or broken markers: the same ts, or a span inside the other's): {shown}"
                     f"{'; ...' if len(held) > 3 else ''}. Each is counted as part of the step before it, not as a "
                     f"step of 0 ms; ms/step is the median of the {len(steps)} step(s) that remain")
    empty = [s.name for s in steps[1:] if s.ms <= 0.0]
    if empty:
        median_words = (f"; so many that ms/step, the median, is 0 ms: the mean, "
                        f"{sum(s.ms for s in steps) / len(steps):.3f} ms, is the pace" if ms_per_step(steps) <= 0.0
                        else "")
        notes.append(f"{len(empty)} step(s) completed no later than the step before them (everything they ran "
                     f"had ended by then) and count as 0 ms: {', '.join(shorten(n) for n in empty[:3])}"
                     f"{' and more' if len(empty) > 3 else ''}{median_words}")
    return notes


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
    on_devices = _markers_on_device_tracks(trace, links)
    if on_devices:
        track = trace.tracks[trace.track[on_devices[0]]]
        why = (f"{len(on_devices)} ProfilerStep#N marker(s) lie on a track that also holds GPU events (pid "
               f"{shorten(str(track[0]))}, tid {shorten(str(track[1]))}: host and device events on one track), "
               "where they are not read as steps")
    else:
        why = "no ProfilerStep#N events"
    note = (f"{window.name}: {why}, so the trace is read as one window of "
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


def _markers_on_device_tracks(trace: Trace, links: Links) -> list[int]:
    """Host step markers (an annotation or operator `ProfilerStep#N`) on a track that holds device events."""
    ids = frozenset(i for i, name in enumerate(trace.names) if _STEP_MARKER.match(name))
    return [r for r in trace.rows_named(ids) if trace.track[r] in links.device_tracks
            and trace.kind[r] in (Kind.ANNOTATION, Kind.CPU_OP, Kind.OTHER)] if ids else []


_STEP_MARKER = re.compile(r"^ProfilerStep#\d+$")


def ms_per_step(steps: list[Step]) -> float:
    return median(s.ms for s in steps)
