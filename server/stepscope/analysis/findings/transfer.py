"""Findings about host-device traffic: repeated-copy and sync-in-step.

Invariants:
- repeated-copy needs the same (line, byte count) host-to-device copy in every active step (or the
  configured share of them), fed by a factory op (arange, tensor, full, ones, zeros, ...) in the same
  statement; copies inside the batch read and copies of tensors no factory built (data batches) are
  never this finding. It observes a repetition; it does not prove the copy is unnecessary.
- sync-in-step reports the host's waits on the device (synchronize calls, including those behind
  `.item()` / `.cpu()`), where they are, how long, and the GPU idle time that follows them.
"""

from __future__ import annotations

from .common import Anchor, finding, machine_words, placed, step_ms
from .thresholds import Thresholds


def _size(nbytes: int) -> str:
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"


def repeated_copy(report: dict, t: Thresholds, anchor: Anchor) -> list[dict]:
    evidence = report.get("evidence") or {}
    n = len(report.get("steps") or [])
    out = []
    for group in evidence.get("h2d_copies") or []:
        if not group.get("factory") or group.get("in_batch_read") or n == 0:
            continue
        if group["steps"] < max(2, t.repeated_copy_step_share * n - 1e-9):
            continue
        # an ss region or a call stack names the statement itself; a frame only its function
        built = "in the same statement" if group.get("precision") in ("exact", "call") else \
            "just before it (the trace cannot show whether in the same statement)"
        out.append(finding(
            "repeated-copy", placed(group, (None, None), evidence)[0],
            f"A {_size(group['bytes'])} host-to-device copy leaves this line {group['per_step']:g} time(s) per step, "
            f"in {group['steps']} of {n} active steps, and copies a tensor built {built} by {group['factory']} "
            f"({machine_words(report)})." + placed(group, (None, None), evidence)[1],
            "The tensor is a constant rebuilt on the host and moved every step: an unsuitable placement or "
            "lifetime. The repetition does not prove the copy is unnecessary.",
            "Build it once on the device before the loop (or with device=... in the factory call), keep the rest of "
            "the step unchanged, verify the outputs are identical, then compare ms/step outside the profiler (same warm-up, several timed passes).",
            figures={"bytes": group["bytes"], "per_step": group["per_step"], "steps": group["steps"],
                     "factory": group["factory"]},
        ))
    return out


def sync_in_step(report: dict, t: Thresholds, anchor: Anchor) -> dict | None:
    evidence = report.get("evidence") or {}
    syncs = evidence.get("syncs") or {}
    step = step_ms(report)
    n = len(report.get("steps") or [])
    if not step or not syncs.get("count") and not syncs.get("ms"):
        return None
    if syncs.get("ms", 0.0) < t.sync_min_share * step or syncs.get("steps", 0) < t.sync_step_share * n:
        return None
    idle = syncs.get("gpu_idle_after_ms")
    idle_words = (f"; after each wait the GPU sat idle {idle:.2f} ms per step until the host queued new work"
                  if idle is not None else "")
    calls = ", ".join(syncs.get("calls") or [])
    where, precision = placed(syncs, anchor, evidence)
    return finding(
        "sync-in-step", where,
        f"The host waits on the device {syncs['ms']:.2f} ms per step ({syncs['ms'] / step:.0%} of the {step:.2f} ms "
        f"step) in {syncs['count']:g} call(s) per step ({calls}), in {syncs['steps']} of {n} active steps"
        f"{idle_words} ({machine_words(report)})." + precision,
        "A value read back inside the step (.item(), .cpu(), .tolist(), printing a tensor, a tensor in an if) or an "
        "explicit synchronize stops the host from queueing ahead, so CPU and GPU work no longer overlap.",
        "Move the read-back out of the step (accumulate on the device and read every N steps, or after the loop) "
        "and compare ms/step outside the profiler (same warm-up, several timed passes); check that the values you log are unchanged.",
        figures={"sync_ms": syncs["ms"], "count": syncs["count"], "steps": syncs["steps"],
                 "gpu_idle_after_ms": idle, "step_ms": step},
    )
