"""Findings about the window as a whole: gpu-not-observed, profiled-faster, unsteady-window, startup-cost.

Invariants:
- GPU time that was not observed is said to be unknown, never zero (guide §11); the finding fires
  only when something says GPU work was expected (a CPU program on a CPU machine gets none).
- The first active step is left out of the spread: it carries the profiler's switch to recording
  and, on a GPU, work queued before the window (it is still listed in the figures).
- Start-up figures come from the run's scenario record, never from the window (GPU work queued
  before the window is not start-up); the step in which the profiler prepares its trace (the first
  warm-up step, after `wait` steps) is left out and said so.
"""

from __future__ import annotations

import math
from statistics import median

from ...textsafe import shorten
from ..present import region_name
from .common import Anchor, finding, machine_words
from .distorted import measure_command
from .thresholds import Thresholds

#: the batch read explains a window faster than the loop when its growth after the window is at
#: least this share of the gap between the two paces
READ_EXPLAINS = 0.5
#: the least share of a batch a warm-up step is taken to use up (the finding fires only where the
#: window's mean step is under 0.9 of the loop's pace, so the queue shrinks by at least 0.1 a step)
LEAST_DRAIN = 0.1


def warmup_past_ready_batches(ahead: int | None, window_ms: float, pace_ms: float, warmup: int | None) -> int:
    """The warm-up that begins the window once the batches prepared ahead are used up.

    Each warm-up step takes one batch from the queue while the workers add `window_ms / pace_ms` of
    one (they make one batch per step of the loop's own pace), so the queue shrinks by
    `1 - window_ms / pace_ms` per step: `ahead` batches last `ahead / (1 - window/pace)` steps, and
    one step more begins the window at the loop's pace. A step about as fast as the loop's pace
    barely shrinks the queue, which is why "ahead + 1" is not enough where the step itself is slow.
    Never less than one step more than the warm-up that ran, nor than 3."""
    least = max((warmup if isinstance(warmup, int) else 0) + 1, 3)
    if not isinstance(ahead, int) or ahead <= 0 or pace_ms <= 0:
        return least
    drain = max(LEAST_DRAIN, 1.0 - window_ms / pace_ms)
    return max(least, math.ceil(ahead / drain - 1e-9) + 1)


def gpu_expected(report: dict) -> str | None:
    """Why GPU events were expected, or None when nothing says the program used a GPU."""
    machine = report.get("machine") or {}
    reason = (report.get("gpu") or {}).get("reason") or ""
    if "runtime calls" in reason:
        return "the trace holds device runtime calls"
    if machine.get("accelerator") in ("cuda", "rocm"):
        return f"the run's interpreter saw a {machine['accelerator'].upper()} device"
    devices = machine.get("trace_devices", machine.get("devices")) or []
    if devices:
        return f"the trace lists {devices[0]}"
    return None


def gpu_not_observed(report: dict, t: Thresholds, anchor: Anchor) -> dict | None:
    gpu = report.get("gpu") or {}
    if gpu.get("observed"):
        return None
    why = gpu_expected(report)
    if why is None:
        return None
    window = report.get("window") or {}
    return finding(
        "gpu-not-observed", (None, None),
        f"No GPU events among the {window.get('events', '?')} events of the window's {len(report.get('steps') or [])} "
        f"active steps, although {why}. GPU time is unknown, not zero ({gpu.get('reason')}).",
        "GPU collection was unavailable or off (CUPTI/roctracer not loaded, no permission, or a CPU-only capture), "
        "so the per-line figures show only host time.",
        "Check that torch.profiler.supported_activities() includes ProfilerActivity.CUDA in this interpreter, "
        "then profile again with GPU collection on (without --cpu-only).",
        figures={"expected_because": why, "reason": gpu.get("reason")},
    )


def unsteady_window(report: dict, t: Thresholds, anchor: Anchor) -> dict | None:
    steps = report.get("steps") or []
    values = [s["ms"] for s in steps]
    if not values:
        return None
    machine = machine_words(report)
    if len(values) < t.min_active_steps:
        return finding(
            "unsteady-window", anchor,
            f"Only {len(values)} active step(s) in the window ({', '.join(f'{v:.2f}' for v in values)} ms, "
            f"{machine}): too few for a distribution.",
            "One or two steps can hold a one-off cost (a first call, an allocation, a new shape) that the "
            "steady state does not have.",
            f"Profile again with at least {max(5, t.min_active_steps)} active steps, then confirm outside the profiler (several timed passes) "
            "(repeated passes without the profiler).",
            figures={"steps_ms": values},
        )
    rest = values[1:]
    mid = median(rest)
    spread = (max(rest) - min(rest)) / mid if mid > 0 else 0.0
    new_names = (report.get("evidence") or {}).get("new_names") or []
    if spread <= t.max_step_spread or max(rest) - min(rest) < t.unsteady_min_range_ms:
        return None
    slowest = 1 + max(range(len(rest)), key=rest.__getitem__)
    new = ""
    if new_names:
        shown = ", ".join(f"{_name_words(n, report.get('source_root'))} (from {n['step']})" for n in new_names[:4])
        new = f" Names absent from the first active step appear later: {shown}."
    return finding(
        "unsteady-window", anchor,
        f"Step times range from {min(rest):.2f} to {max(rest):.2f} ms, a range {spread:.2f} times their median of "
        f"{mid:.2f} ms (the first active step, {values[0]:.2f} ms, left out; {machine}); the slowest is "
        f"{shorten(steps[slowest]['name'])}.{new}",
        "The window is not steady: warm-up may be too short, or the step takes different paths "
        "(new shapes, recompilation, a periodic action such as logging or checkpointing).",
        "Profile again with a longer warm-up and more active steps, and compare the slow step's events "
        "with a typical one; confirm outside the profiler with several timed passes.",
        figures={"steps_ms": values, "spread": round(spread, 4), "slowest": steps[slowest]["name"],
                 "new_names": new_names[:10]},
    )


def _name_words(item: dict, root: str | None) -> str:
    return shorten(region_name(str(item["name"]), item.get("file"), item.get("line"), root))


def startup_cost(report: dict, t: Thresholds, anchor: Anchor) -> dict | None:
    startup = report.get("startup") or {}
    first = [v if isinstance(v, (int, float)) else None for v in startup.get("first_steps_ms") or []]
    steady = report.get("ms_per_step")
    if not any(v is not None for v in first) or not steady:
        return None
    schedule = report.get("schedule") or {}
    wait, warmup = schedule.get("wait"), schedule.get("warmup")
    # the profiler prepares its trace at the first warm-up step: that step holds the profiler's own start
    profiler_start = wait if isinstance(wait, int) and wait > 0 and isinstance(warmup, int) and warmup > 0 else None
    compared = [(i, v) for i, v in enumerate(first) if v is not None and i != profiler_start]
    if not compared:
        return None
    worst_i, worst = max(compared, key=lambda iv: iv[1])
    # a start-up cost stands out of the window's own range, not only of its median
    window = [s["ms"] for s in (report.get("steps") or [])[1:]]
    reference = max([steady, *window])
    if worst < t.startup_ratio * reference or worst - steady < t.startup_min_extra_ms:
        return None
    to_first = startup.get("to_first_step_ms")
    before = f"{to_first:.1f} ms from start to the first step; " if isinstance(to_first, (int, float)) else ""
    left_out = ""
    if profiler_start is not None and profiler_start < len(first) and first[profiler_start] is not None:
        left_out = (f" Step {profiler_start + 1} ({first[profiler_start]:.1f} ms) is left out: the profiler "
                    "prepares its trace there.")
    shown = ", ".join(f"{v:.1f}" for v in first if v is not None)
    return finding(
        "startup-cost", anchor,
        f"{before}the first steps took {shown} ms; step {worst_i + 1}, at {worst:.1f} ms, is {worst / steady:.1f}x the "
        f"active window's {steady:.2f} ms/step (its slowest step: {reference:.2f} ms; {machine_words(report)}). These "
        f"are start-up figures, kept apart from the window.{left_out}",
        "The first steps pay one-off costs that the steady state does not: the program's own lazy initialisation "
        "or loading, allocator growth, and on a GPU the first use of cuBLAS/cuDNN, kernel loading and selection, or "
        "compilation. Or the step runs a periodic action that is also due at step 0 (an evaluation, a checkpoint "
        "under `if step % N == 0`): that cost comes back every N steps.",
        "Decide whether the question is start-up or steady state; for start-up, time the first steps on their own "
        "across several fresh runs; for steady state, keep this warm-up or lengthen it.",
        severity="info",
        figures={"to_first_step_ms": to_first, "first_steps_ms": first, "ms_per_step": steady,
                 "ratio": round(worst / steady, 2), "profiler_start_step": profiler_start},
    )


def profiled_faster(report: dict, t: Thresholds, anchor: Anchor) -> dict | None:
    """The profiled steps read much faster than the same loop timed without the profiler, after the
    window, in the same process: the window is not the loop's pace, and every figure of it says so.

    The likely cause is named only where the evidence supports it: the batch read per step in the
    window (the trace's batch-read region) against its host time after the window. A DataLoader's
    workers prepare batches while the loop pauses (the profiler's start-up, one-off costs of the
    first steps); a window that uses them up does not wait for data as the loop does."""
    d = report.get("distortion")
    unprofiled = report.get("unprofiled") or {}
    profiled, plain = report.get("ms_per_step"), unprofiled.get("ms_per_step")
    if not isinstance(d, (int, float)) or d >= t.profiled_faster_ratio or not profiled or not plain:
        return None
    evidence = report.get("evidence") or {}
    window_mean = evidence.get("step_mean_ms")
    plain_mean = unprofiled.get("mean_ms")
    if isinstance(window_mean, (int, float)) and isinstance(plain_mean, (int, float)) and plain_mean > 0 \
            and window_mean / plain_mean >= t.profiled_faster_mean_ratio:
        return None  # the medians differ, the paces do not: step times alternate (said by unsteady-window)
    machine = machine_words(report)
    figures: dict = {"profiled_ms": profiled, "unprofiled_ms": plain, "distortion": d,
                     "profiled_mean_ms": window_mean, "unprofiled_mean_ms": plain_mean}
    observation = (f"The profiled steps read {profiled:.2f} ms/step, the same loop without the profiler "
                   f"{plain:.2f} ms/step (median of {unprofiled.get('passes')} steps after the window, same process; "
                   f"{machine}): the window ran {1 / d:.1f}x faster than the loop's own pace")
    if isinstance(window_mean, (int, float)) and isinstance(plain_mean, (int, float)):
        observation += f" (means {window_mean:.2f} and {plain_mean:.2f} ms/step)"
    observation += ". Its ms/step and every share of it are not the loop's steady state."
    window_read = (evidence.get("batch_read") or {}).get("ms")
    plain_read = unprofiled.get("batch_read_ms")
    source = ((report.get("scenario") or {}).get("observed") or {}).get("data_source") or {}
    ahead = source.get("prepared_ahead")
    command = measure_command(report)
    warmup = (report.get("schedule") or {}).get("warmup")
    want = warmup_past_ready_batches(ahead, window_mean if isinstance(window_mean, (int, float)) else profiled,
                                     plain_mean if isinstance(plain_mean, (int, float)) else plain, warmup)
    figures["advised_warmup"] = want
    gap = (plain_mean if isinstance(plain_mean, (int, float)) else plain) - \
        (window_mean if isinstance(window_mean, (int, float)) else profiled)
    if isinstance(window_read, (int, float)) and isinstance(plain_read, (int, float)):
        figures.update(window_batch_read_ms=window_read, unprofiled_batch_read_ms=plain_read)
        observation += (f" The batch read takes {window_read:.2f} ms per step in the window and {plain_read:.2f} ms "
                        "after it.")
    if isinstance(window_read, (int, float)) and isinstance(plain_read, (int, float)) and gap > 0 \
            and plain_read - window_read >= READ_EXPLAINS * gap:
        workers = source.get("num_workers")
        held = (f"the DataLoader's {workers} worker{'s' if workers != 1 else ''} keep{'s' if workers == 1 else ''} "
                f"up to {ahead} batches ready, and filled them "
                if isinstance(ahead, int) and ahead > 0 else "batches were prepared ahead ")
        hypothesis = (f"The window's steps found their batches ready: {held}while the loop paused before the window "
                      "(the profiler's start-up, the first steps' one-off costs), so the window did not wait for data "
                      "as the loop does at its pace.")
        next_check = (f"Profile again with `--warmup {want}` (enough warm-up steps to use up the batches prepared "
                      f"ahead at the window's pace while the workers keep adding to them), so that the window begins "
                      f"once they are used up, and time the loop's pace without the profiler: "
                      f"`{command}` (its mean over the passes is the pace where steps wait for data in turn).")
        figures["cause"] = "batches prepared ahead"
    else:
        hypothesis = ("Something the window's steps did not pay for, the steps after it did: batches prepared ahead "
                      "(the batch-read figures above do not show it), a device clock that rose, or work that "
                      "accumulates. The evidence here does not say which.")
        next_check = (f"Profile again with a longer warm-up (`--warmup {want}`) and compare; time the loop without "
                      f"the profiler with `{command}`.")
        figures["cause"] = None
    return finding("profiled-faster", anchor, observation, hypothesis, next_check, figures=figures)
