"""Which machine a figure came from, and whether GPU work was observed (guide §11, §13).

Invariants:
- `machine["source"]` says where the description came from: "scenario" (the run's record, written
  on the machine that ran the program) or "trace" (what the trace itself says).
- GPU work is observed only when the trace holds GPU events (kernels, copies, memsets). When it does
  not, `reason` says what the trace shows instead; nothing is reported as zero. Another
  accelerator's device events (Ascend NPU, a PrivateUse1 backend, MTIA) are said as seen and not
  analysed, never as a CPU-only trace.
"""

from __future__ import annotations

import re
from typing import Any

from ..trace import Kind, Trace
from .links import Links


def _device_list(meta: dict[str, Any]) -> list[Any]:
    """The trace's list of devices (`deviceProperties`, or MTIA's `computeProperties`); [] when it
    has none or holds something else (a number, a string: see `machine_notes`)."""
    props = meta.get("deviceProperties") or meta.get("computeProperties") or []
    return props if isinstance(props, list) else []


def _device_name(i: int, d: Any) -> str | None:
    """A listed device's name; one listed without a name is named by its place (`device 0 (no name)`)."""
    if not isinstance(d, dict):
        return None
    name = d.get("name")
    if isinstance(name, str) and name.strip():
        return name
    index = d.get("id") if isinstance(d.get("id"), int) and not isinstance(d.get("id"), bool) else i
    return f"device {index} (no name)"


#: the highest rank or world size read from a trace (no job has more processes)
MAX_RANK = 2**31 - 1


def _count(value: Any, least: int) -> int | None:
    """An integer rank or world size as the trace writes it (an int, or digits in a string), or None."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= MAX_RANK:
        return None
    return value


def machine_from_trace(trace: Trace) -> dict[str, Any]:
    meta = trace.metadata
    devices = [n for n in (_device_name(i, d) for i, d in enumerate(_device_list(meta))) if n is not None]
    dist = meta.get("distributedInfo") if isinstance(meta.get("distributedInfo"), dict) else {}
    machine: dict[str, Any] = {
        "source": "trace",
        "host": meta.get("host_name") if isinstance(meta.get("host_name"), str) else None,
        "devices": devices,
        "device": devices[0] if devices else "no device listed in the trace",
        "rank": _count(dist.get("rank"), 0),
        "world_size": _count(dist.get("world_size"), 1),
    }
    for key in ("cuda_runtime_version", "cuda_driver_version", "cupti_version", "hip_runtime_version"):
        if key in meta:
            machine[key] = meta[key]
    return machine


def machine_notes(trace: Trace) -> list[str]:
    """What the trace says of its machine that cannot be read as it is: a device list that is not a
    list, devices without a name, a rank or world size that is no count."""
    meta = trace.metadata
    notes = []
    for key in ("deviceProperties", "computeProperties"):
        value = meta.get(key)
        if value is not None and not isinstance(value, list):
            notes.append(f"{key} is {_shown(value)}, not a list of devices: no device is read from it")
    unnamed = [d for i, d in enumerate(_device_list(meta)) if (_device_name(i, d) or "").endswith("(no name)")]
    if unnamed:
        notes.append(f"{len(unnamed)} device(s) listed without a name: named by their id (device N (no name))")
    dist = meta.get("distributedInfo")
    if isinstance(dist, dict):
        for key, least in (("rank", 0), ("world_size", 1)):
            if key in dist and dist[key] is not None and _count(dist[key], least) is None:
                notes.append(f"distributedInfo.{key} is {_shown(dist[key])}, not a whole number from {least} to "
                             f"{MAX_RANK}: read as unknown")
    return notes


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def describe_machine(trace: Trace, scenario: dict[str, Any] | None) -> dict[str, Any]:
    from_trace = machine_from_trace(trace)
    recorded = scenario.get("machine") if isinstance(scenario, dict) else None
    if isinstance(recorded, dict) and recorded:
        machine = {"source": "scenario", **recorded}
        machine.setdefault("devices", from_trace["devices"])
        machine.setdefault("device", from_trace["device"])
        for key in ("rank", "world_size"):  # the trace knows its own rank, even beside a shared record
            if from_trace[key] is not None:
                machine[key] = from_trace[key]
        machine["trace_devices"] = from_trace["devices"]
        return machine
    return from_trace


#: processes of a trace that hold another accelerator's device events (torch_npu writes "Ascend Hardware")
_ACCELERATOR_PROCESS = re.compile(r"\b(NPU|Ascend|Hardware|AI ?Core|HPU|Gaudi|MTIA|AIU|Spyre)\b", re.IGNORECASE)


def other_accelerator_events(trace: Trace) -> tuple[int, list[str]]:
    """Events of a device that is not CUDA/ROCm: those Kineto files under such a device's category, and
    events on a process named like an accelerator (Ascend's); with the names they are seen under."""
    count = trace.kind.count(Kind.DEVICE_OTHER)
    seen = ["device events of a non-CUDA category"] if count else []
    accelerators = {pid: name for pid, name in trace.process_names.items()
                    if isinstance(name, str) and _ACCELERATOR_PROCESS.search(name)}
    if accelerators:
        tracks = frozenset(i for i, (pid, _) in enumerate(trace.tracks) if pid in accelerators)
        on_them = sum(1 for k, t in zip(trace.kind, trace.track) if k == Kind.OTHER and t in tracks)
        if on_them:
            count += on_them
            seen.extend(f"process {name!r}" for name in sorted(set(accelerators.values())))
    return count, seen


def gpu_observation(trace: Trace, links: Links, scenario: dict[str, Any] | None) -> dict[str, Any]:
    if links.gpu_rows:
        return {"observed": True, "reason": None}
    runtime_calls = trace.kind.count(Kind.RUNTIME)
    other_device, other_seen = other_accelerator_events(trace)
    props = _device_list(trace.metadata)
    logged = trace.metadata.get("ERROR")
    errors = [e for e in logged if isinstance(e, str)] if isinstance(logged, list) else []
    scenario = scenario if isinstance(scenario, dict) else {}
    options = scenario.get("options") if isinstance(scenario.get("options"), dict) else {}
    activities = scenario.get("activities")
    if scenario.get("cpu_only") or options.get("cpu_only"):
        reason = "GPU collection was off for this run (--cpu-only): GPU time was not observed"
    elif isinstance(activities, list) and activities and not any(str(a).upper() in ("CUDA", "XPU", "MTIA", "PRIVATEUSE1") for a in activities):
        reason = (f"the profiler recorded only {', '.join(map(str, activities))} activities: GPU time was not observed")
    elif other_device:
        reason = (f"the trace holds {other_device} events of an accelerator that is not CUDA/ROCm "
                  f"({', '.join(other_seen)}): seen, but not analysed, so its device time was not observed")
    elif runtime_calls:
        reason = (f"the trace holds {runtime_calls} device runtime calls but no GPU events: GPU collection "
                  "(CUPTI / roctracer) was unavailable or failed, so GPU time was not observed")
    elif props:
        reason = "devices are listed but the trace holds no GPU events or device calls: GPU time was not observed"
    else:
        reason = "CPU-only trace (no device listed, no GPU events): GPU time was not observed"
    if errors:
        reason += f"; profiler error: {errors[0][:200]}"
    return {"observed": False, "reason": reason}
