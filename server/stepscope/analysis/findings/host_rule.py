"""The `host-bound` finding: the host's own work sets the step's pace (guide §4: CPU time, GPU work
and waiting, told apart).

Invariants:
- Its figure is the evidence's `host_work` (host_work.py): host time on the step's thread in lines
  that neither record the model's autograd graph nor issue GPU work, outside the batch read
  (input-bound's), the waits on the device (sync-in-step's), backward and the optimizer's update;
  with GPU events, only while the GPU is idle. Launch overhead is small-launches', never this one's.
- With GPU events it says how long the GPU is idle and how much of that the host's own work holds.
  Without them it never speaks of a GPU's idle time: on a CPU-only run it compares the host's own
  work with the step (the model's work runs on the same host), and it needs a training step (autograd
  recorded), the only way the model's work is told apart from the rest.
- Where the step was timed without the profiler after the window (`unprofiled`) and GPU time was
  observed, the real step's GPU idle time (its length less the GPU's work in the window) must also
  be at least the threshold's share of it: a profiler that slows the host can make a step look
  host-bound that is not.
- It sits on the line the descent in host_work.py names: never a wrapper around the work.
"""

from __future__ import annotations

from ..present import share_percent
from .common import Anchor, basis, finding, machine_words, placed, real_gpu_idle, short_place
from .thresholds import Thresholds
from .window import gpu_expected


def _lines_words(work: dict, root: str | None, per: str) -> str:
    shown = [f"{short_place(item, root)} ({item['ms']:.2f} ms)" for item in work.get("lines") or [] if item.get("file")]
    return f"; the lines that run it, per {per}: {', '.join(shown)}" if shown else ""


def _place_words(work: dict, root: str | None) -> str:
    """` — 88.10 ms of it inside train.py:12, reached through train.py:26`."""
    if not work.get("file"):
        return ""
    through = [item for item in work.get("within") or []
               if item.get("file") and (item["file"], item["line"]) != (work["file"], work["line"])]
    route = f", reached through {' and '.join(short_place(i, root) for i in through)}" if through else ""
    return f" — {work['anchor_ms']:.2f} ms of it inside {short_place(work, root)}{route}"


def host_bound(report: dict, t: Thresholds, anchor: Anchor) -> dict | None:
    evidence = report.get("evidence") or {}
    work = evidence.get("host_work") or {}
    on = basis(report)
    ms = work.get("ms") or 0.0
    if on is None or ms <= 0 or ms < t.host_bound_share * on.ms:
        return None
    gpu_observed = bool((report.get("gpu") or {}).get("observed")) and work.get("gpu_idle_ms") is not None
    if not gpu_observed and not work.get("records_autograd"):
        return None  # nothing tells the model's own work from the rest
    root = report.get("source_root")
    where, precision = placed(work, anchor, evidence)
    figures = {"host_ms": ms, "step_ms": on.ms, "share": round(min(1.0, ms / on.ms), 4),
               "gpu_idle_ms": work.get("gpu_idle_ms"), "launch_ms": work.get("launch_ms"),
               "lines": [{"file": i.get("file"), "line": i.get("line"), "ms": i.get("ms")}
                         for i in work.get("lines") or []]}
    place = _place_words(work, root) + _lines_words(work, root, on.per)
    if gpu_observed:
        real = real_gpu_idle(report)
        if real is not None and real[2] < t.host_bound_share * real[0]:
            return None  # the GPU is busy most of the real step: the profiler slowed the host
        observation = (f"The GPU is idle {work['gpu_idle_ms']:.2f} ms of {on.words()}, and for {ms:.2f} ms of it "
                       f"({on.share(ms)}) the host runs its own work: Python and CPU operations that record no "
                       f"autograd graph and issue little GPU work, outside the batch read, the waits on the device "
                       f"and the launch calls{place} ({machine_words(report)}).")
        if real is not None:
            figures.update(real_step_ms=real[0], real_gpu_idle_ms=round(real[2], 4))
            observation += (f" Without the profiler (the steps timed after the window, same process) the step takes "
                            f"{real[0]:.2f} ms and the GPU's work {real[1]:.2f} ms of it: the GPU is idle "
                            f"{share_percent(real[2] / real[0])} of the real step too.")
        hypothesis = ("The host's own work in the step (per-sample Python or CPU tensor work, such as augmentation "
                      "before the upload, or a wait on something other than the device: storage, a lock) sets its "
                      "pace: the GPU waits for it every step. Launch overhead (small-launches) and waits on the "
                      "device (sync-in-step) are not part of this figure.")
        move = ("into the DataLoader's worker processes (the Dataset's __getitem__ or a collate_fn, num_workers > 0), "
                "or onto the GPU after the upload (the same operations on the batch as one device tensor)")
    else:
        unknown = (" GPU activity was not observed, so whether a GPU waited is unknown."
                   if gpu_expected(report) else " No GPU ran in this step: the model's work runs on the same host.")
        observation = (f"Lines that are no part of the model's training — Python and CPU operations that record no "
                       f"autograd graph, outside the batch read, backward and the optimizer's update — take {ms:.2f} ms "
                       f"of {on.words()} ({share_percent(ms / on.ms)}){place} ({machine_words(report)}).{unknown}")
        hypothesis = ("Work that prepares data (per-sample augmentation, conversion, Python bookkeeping), or a wait "
                      "on something else (storage, a lock), runs in the main process between the model's steps, so "
                      "the step waits for it every time.")
        move = "into the DataLoader's worker processes (the Dataset's __getitem__ or a collate_fn, num_workers > 0)"
    return finding(
        "host-bound", where, observation + precision, hypothesis,
        f"Move the work at {short_place(work, root) if work.get('file') else 'these lines'} {move}, check that the "
        "outputs are unchanged, and compare ms/step outside the profiler (same warm-up, several timed passes).",
        figures=figures,
    )
