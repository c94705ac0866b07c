"""Findings about host-device traffic: repeated-copy and sync-in-step.

Invariants:
- repeated-copy needs the same (line, byte count) host-to-device copy in every active step (or the
  configured share of them), fed by a factory op (arange, tensor, full, ones, zeros, ...) in the same
  statement, through any reshape or view of what it built; copies inside the batch read and copies of
  tensors no factory built (data batches) are never this finding. It observes a repetition; it does
  not prove the copy is unnecessary. When the copy also blocks the host (pageable memory), it says
  how long, and that wait is left out of sync-in-step.
- sync-in-step reports the host's waits on the device (links.py: synchronize calls, including those
  behind `.item()` / `.cpu()`, and copies the host cannot leave before the device reaches them),
  where they are, how many per step, how long, and the GPU idle time that follows them. It fires
  as a warning when the waits hold a share of the step; and, at severity info, when they happen in
  every active step however short they look: the profiler slows the host more than the device, so
  under it a wait looks shorter than it is (the measure check times the step without it).
- On a trace without step markers, sync-in-step runs on the window (a wait needs no step) and says so.
"""

from __future__ import annotations

from ..present import share_percent
from .common import Anchor, basis, finding, machine_words, placed, real_gpu_idle, short_place
from .distorted import measure_check
from .thresholds import Thresholds
from .work import window_words

def _size(nbytes: int) -> str:
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"


def constant_copies(report: dict, t: Thresholds) -> list[dict]:
    """The evidence's host-to-device copy groups that repeated-copy reports."""
    evidence = report.get("evidence") or {}
    n = len(report.get("steps") or [])
    if n == 0:
        return []
    return [g for g in evidence.get("h2d_copies") or []
            if g.get("factory") and not g.get("in_batch_read") and g["steps"] >= max(2, t.repeated_copy_step_share * n - 1e-9)]


def _waits_at(report: dict, file: str | None, line: int | None) -> dict | None:
    """The host waits the evidence places on one line, or None."""
    for entry in ((report.get("evidence") or {}).get("syncs") or {}).get("lines") or []:
        if file and entry.get("file") == file and entry.get("line") == line:
            return entry
    return None


def repeated_copy(report: dict, t: Thresholds, anchor: Anchor) -> list[dict]:
    evidence = report.get("evidence") or {}
    n = len(report.get("steps") or [])
    out = []
    for group in constant_copies(report, t):
        # an ss region or a call stack names the statement itself; a frame only its function
        built = "in the same statement" if group.get("precision") in ("exact", "call") else \
            "just before it (the trace cannot show whether in the same statement)"
        waits = _waits_at(report, group.get("file"), group.get("line"))
        blocked = ""
        if waits and waits.get("ms"):
            blocked = (f" The host waits on the device {waits['ms']:.3f} ms per step on this line: a copy from pageable "
                       "memory starts only when the device has finished its earlier work.")
        out.append(finding(
            "repeated-copy", placed(group, (None, None), evidence)[0],
            f"A {_size(group['bytes'])} host-to-device copy leaves this line {group['per_step']:g} time(s) per step, "
            f"in {group['steps']} of {n} active steps, and copies a tensor built {built} by {group['factory']} "
            f"({machine_words(report)})." + blocked + placed(group, (None, None), evidence)[1],
            "The tensor is a constant rebuilt on the host and moved every step: an unsuitable placement or "
            "lifetime. The repetition does not prove the copy is unnecessary.",
            "Build it once on the device before the loop (or with device=... in the factory call), keep the rest of "
            "the step unchanged, verify the outputs are identical, then compare ms/step outside the profiler (same "
            "warm-up, several timed passes).",
            figures={"bytes": group["bytes"], "per_step": group["per_step"], "steps": group["steps"],
                     "factory": group["factory"], "host_wait_ms": waits.get("ms") if waits else 0.0},
        ))
    return out


def _without_uploads(entry: dict) -> dict:
    """A line's waits less its uploads from pageable memory (a constant's copy, said by repeated-copy)."""
    kinds = dict(entry.get("kinds") or {})
    uploads = kinds.pop("upload", 0.0)
    kind_ms = dict(entry.get("kind_ms") or {})
    upload_ms = kind_ms.pop("upload", 0.0)
    calls = [c for c in entry.get("calls") or [] if "pageable memory" not in c]
    return {**entry, "kinds": kinds, "kind_ms": kind_ms, "calls": calls,
            "count": round(entry["count"] - uploads, 2), "ms": round(max(0.0, entry["ms"] - upload_ms), 4)}


def _reads(entry: dict) -> bool:
    """Whether a line's waits include one that is not an upload (a read-back, a synchronize)."""
    kinds = entry.get("kinds")
    return kinds is None or any(kind != "upload" for kind in kinds)


def sync_in_step(report: dict, t: Thresholds, anchor: Anchor) -> dict | None:
    evidence = report.get("evidence") or {}
    syncs = evidence.get("syncs") or {}
    on = basis(report, window=True)
    n = max(1, len(report.get("steps") or []))
    if on is None or not (syncs.get("count") or syncs.get("ms")):
        return None
    # the uploads of a constant's own copy are said by repeated-copy, on its line
    copies = {(g.get("file"), g.get("line")) for g in constant_copies(report, t) if g.get("file")}
    lines = [_without_uploads(e) if (e.get("file"), e.get("line")) in copies else e for e in syncs.get("lines") or []]
    lines = [e for e in lines if e["count"] > 0]
    if syncs.get("lines") is not None and copies:
        if not lines:
            return None
        ms = round(sum(e["ms"] for e in lines), 4)
        count = round(sum(e["count"] for e in lines), 2)
        steps = max(e["steps"] for e in lines)
    else:
        ms, count, steps = syncs.get("ms", 0.0), syncs.get("count", 0.0), syncs.get("steps", 0)
    # uploads from pageable memory are ordinary for data batches: only read-backs and synchronize
    # calls, which the profiler makes look short, are said however short they look
    kinds: dict[str, float] = {}
    for e in lines:
        for kind, c in (e.get("kinds") or {}).items():
            kinds[kind] = kinds.get(kind, 0.0) + c
    held_back = sum(c for kind, c in kinds.items() if kind != "upload") if kinds else count
    every_step = steps >= n and held_back >= 1 and all(e["steps"] >= n for e in lines if _reads(e)) \
        and any(_reads(e) for e in lines or [syncs])
    large = ms >= t.sync_min_share * on.ms and steps >= t.sync_step_share * n
    if not (large or every_step):
        return None
    idle = syncs.get("gpu_idle_after_ms")
    idle_words = (f"; after the waits the GPU sat idle {idle:.2f} ms per {on.per} until the host queued new work"
                  if idle is not None and idle >= 0.005 else "")
    root = report.get("source_root")
    shown = lines[:3] if lines else [syncs]
    if any(e.get("file") for e in shown):
        places = " at " + "; ".join(f"{short_place(e, root)} ({e.get('count', 0):g} per {on.per}: "
                                    f"{', '.join(e.get('calls') or [])})" for e in shown)
    else:
        places = f" ({', '.join(syncs.get('calls') or [])})"
    where, precision = placed(lines[0] if lines else syncs, anchor, evidence)
    if on.per == "window":
        observation = (f"The host waits on the device {count:g} time(s) in the window{places}, for {ms:.3f} ms "
                       f"({on.share(ms)}){idle_words} ({machine_words(report)}).")
    else:
        observation = (f"The host waits on the device {count:g} time(s) per step, in {steps} of {n} active steps"
                       f"{places}, for {ms:.3f} ms per step ({on.share(ms)}){idle_words} ({machine_words(report)}).")
    # what the waits can cost in the real step (the bound's reasoning: _most_saved)
    real = real_gpu_idle(report) if on.per == "step" and (report.get("gpu") or {}).get("observed") else None
    saved = _most_saved(real, ms) if real is not None else None
    outlasts = real is not None and _host_outlasts(real, ms)
    costly = real is None or (saved >= t.sync_min_share * real[0] and not outlasts)
    if not large and costly:
        observation += (" Under the profiler these waits look short: the profiler slows the host more than the "
                        "device, so the device is often done before the host asks, and without the profiler the "
                        "same waits can cost a real share of the step.")
    if real is not None:
        observation += _real_cost_words(report, real, saved, costly, ms if outlasts else None)
    uploads_only = bool(kinds) and set(kinds) == {"upload"}
    if uploads_only:
        hypothesis = ("A copy from pageable host memory starts only when the device has finished the work queued "
                      "before it, so the host cannot queue ahead while it waits.")
        check = (f"Copy from pinned memory with non_blocking=True (DataLoader(pin_memory=True), or tensor.pin_memory()), "
                 f"check the outputs, and compare ms/step outside the profiler: {measure_check(report)}.")
    else:
        hypothesis = ("A value read back inside the step (.item(), .cpu(), .tolist(), printing a tensor, a tensor in an "
                      "if), a copy to or from pageable host memory, or an explicit synchronize stops the host from "
                      "queueing ahead, so CPU and GPU work no longer overlap.")
        if real is not None:  # the step is timed without the profiler already: measure the change itself
            check = ("Measure what the waits cost: move the read-back out of the step (accumulate on the device and "
                     "read every N steps, or after the loop), check that the values you log are unchanged, and time "
                     "both versions without the profiler with `stepscope measure --against` (several timed passes "
                     "each).")
        else:
            check = (f"First {measure_check(report)}; then move the read-back out of the step (accumulate on the device "
                     "and read every N steps, or after the loop), check that the values you log are unchanged, and "
                     "compare the two with `stepscope measure --against` (several timed passes, no profiler).")
    if real is not None and not costly:
        hypothesis += (" Here the host's own work outlasts the GPU's in the real step: the GPU keeps up with the "
                       "host, so the host finds it nearly done when it asks and the waits can cost little however "
                       "long the GPU idles; the step is the host's to shorten." if outlasts else
                       " Here the GPU is busy nearly all of the real step, so the host stays ahead of it despite the "
                       "waits, and they can cost little.")
    figures = {"sync_ms": ms, "count": count, "steps": steps, "gpu_idle_after_ms": idle, "step_ms": on.ms,
               "per": on.per, "every_step": every_step, "kinds": kinds,
               "lines": [{"file": e.get("file"), "line": e.get("line"), "count": e.get("count"), "ms": e.get("ms")}
                         for e in shown if e.get("file")]}
    if real is not None:
        figures.update(real_step_ms=real[0], real_gpu_busy_ms=real[1], real_gpu_idle_ms=round(real[2], 4),
                       most_saved_ms=round(saved, 4), most_saved_share=round(saved / real[0], 4))
    return finding(
        "sync-in-step", where, observation + precision + window_words(on.per), hypothesis, check,
        # with the real step known, severity follows what the waits can cost there, not the profiled share
        severity=("warning" if costly else "info") if real is not None else ("warning" if large else "info"),
        figures=figures,
    )


def _most_saved(real: tuple[float, float, float], wait_ms: float) -> float:
    """The most removing the waits can save in the step timed without the profiler: no more than the
    GPU's idle time there (the step cannot get shorter than the GPU's work), and no more than the GPU's
    work itself plus the waits as profiled (a wait lasts while the GPU finishes work queued before it,
    plus the read-back's own latency): where the GPU has little work, the host finds it done and the
    waits cost little however idle the GPU is."""
    _, busy, idle = real
    return min(idle, busy + wait_ms)


def _host_outlasts(real: tuple[float, float, float], wait_ms: float) -> bool:
    """Whether the host's own work in the real step (the step less the longest the waits can last there,
    the GPU's work plus the waits as profiled) is at least the GPU's work: then the GPU keeps up with a
    host that launches its work as it goes, and a wait finds only the work launched just before it, so
    the waits likely cost about their own time; only GPU work launched in a burst just before a wait
    makes them cost up to the bound."""
    step, busy, _ = real
    return step - (busy + wait_ms) >= busy


def _real_cost_words(report: dict, real: tuple[float, float, float], saved: float, costly: bool,
                     outlasting_wait: float | None) -> str:
    """What the waits can cost in the step timed without the profiler (_most_saved; `outlasting_wait`:
    the waits as profiled, where the host's own work outlasts the GPU's, _host_outlasts)."""
    step, busy, idle = real
    passes = (report.get("unprofiled") or {}).get("passes")
    said = (f" Without the profiler (the mean of the {passes} steps timed after the window, same process) the step "
            f"takes {step:.2f} ms and the GPU's work {busy:.2f} ms of it (its kernels and copies as the window timed "
            f"them): the GPU is idle {idle:.2f} ms of the real step ({share_percent(idle / step)}).")
    # where the bound is below the idle time, the host outlasts the GPU (busy + waits < idle = step - busy)
    bound = (f"up to that idle time, {share_percent(saved / step)} of the real step" if saved >= idle else
             f"at most {saved:.2f} ms ({share_percent(saved / step)} of the real step): a wait lasts while the GPU "
             "finishes the work queued before it, and the GPU has no more work than that, the waits' own time added")
    if outlasting_wait is not None:
        return said + (f" The host's own work, at least {step - busy - outlasting_wait:.2f} ms of it, outlasts the "
                       f"GPU's {busy:.2f} ms, so the GPU keeps up with a host that launches as it goes and a wait "
                       f"finds only the work launched just before it: the waits likely cost about their own time, "
                       f"{outlasting_wait:.3f} ms ({share_percent(outlasting_wait / step)} of the real step). Only GPU "
                       f"work launched in a burst just before a wait would make them cost more, {bound}.")
    if costly:
        return said + (" After each wait the GPU idles until the host queues new work, so removing the waits can save "
                       f"{bound}; how much of it they cost (the host's own work can leave the GPU idle too) only a "
                       "measurement with and without them tells.")
    return said + (f" Removing the waits could save {bound}: that is the most, so in the real step they cost little.")
