"""What the step contains — batch read, transfer, forward, backward, optimizer step — as the trace
shows it (guide §1: a step's boundaries are part of the question; compare only windows with the
same read and transfer boundaries).

Pure: a finished report (lines, regions, evidence) in, a small dict out. Each part is True when
the trace shows it, False when the trace shows it is absent, never guessed from the source.
"""

from __future__ import annotations

from typing import Any

_FORWARD_EXCLUDED = ("ss:", "ProfilerStep", "Optimizer.", "enumerate(DataLoader)", "autograd::", "Memcpy", "Memset")


def _counter_loop(report: dict[str, Any], batch: dict[str, Any]) -> bool:
    """True when the only sign of a batch read is the loop header of a loop whose items hold no
    tensor (`for step in range(n)`): that `next()` counts, it reads nothing."""
    signals = batch.get("signals") or []
    observed = (report.get("scenario") or {}).get("observed") or {}
    item = observed.get("batch")
    return bool(signals) and all(s.startswith("ss:") for s in signals) and isinstance(item, dict) \
        and not item.get("tensors")


def describe_step(report: dict[str, Any]) -> dict[str, Any]:
    evidence = report.get("evidence") or {}
    lines = report.get("lines") or []
    regions = report.get("regions") or []
    batch = evidence.get("batch_read") or {}
    batch_read = bool(batch.get("ms")) and not _counter_loop(report, batch)
    copies_h2d = any((line.get("copies") or {}).get("h2d", {}).get("count") for line in lines)
    transfer = bool(evidence.get("h2d_copies")) or copies_h2d
    backward = any(line.get("backward_ms") for line in lines) or any(
        r["label"].startswith("autograd::engine::evaluate_function") for r in regions)
    optimizer = any(r["label"].startswith("Optimizer.step#") for r in regions)
    # a replayed CUDA graph's work has no host-side op: its kernels' names say what it holds
    kernels = evidence.get("kernels") or {}
    replayed = bool(kernels.get("graph_launches"))
    backward = backward or bool(kernels.get("graph_backward"))
    optimizer = optimizer or bool(kernels.get("graph_optimizer"))
    batch_line = (batch.get("file"), batch.get("line"))
    forward = any(op.get("self_ms") and (op.get("file"), op.get("line")) != batch_line
                  for op in evidence.get("ops") or []) or replayed
    parts = [name for name, present in (("batch read", batch_read), ("transfer to the device", transfer),
                                         ("forward", forward), ("backward", backward),
                                         ("optimizer step", optimizer)) if present]
    if replayed:
        parts.append("replayed CUDA graph")
    return {
        "replays_graph": replayed,
        "batch_read": batch_read,
        "transfer": transfer,
        "forward": forward,
        "backward": backward,
        "optimizer_step": optimizer,
        "kind": "training" if backward or optimizer else "inference",
        "summary": ", ".join(parts) if parts else "nothing recognised",
    }
