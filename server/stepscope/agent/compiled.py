"""Whether the step runs torch.compile'd code, and what says so (the scenario's `torch_compile`).

Three witnesses, each recorded as found:
- objects in the step's frame: modules wrapped by `torch.compile` (OptimizedModule), modules
  compiled in place (`Module.compile()`), functions wrapped by `torch.compile` (probe.py);
- dynamo's counters: frames compiled before the active window and during it (a compilation inside
  the window is measured as if it were part of the step);
- the window's trace: events only compiled code emits — `Torch-Compiled Region` (newer torch; not in 2.1),
  `TorchDynamo Cache Lookup`, AOTAutograd's `CompiledFunction`, inductor's `## Call CompiledFxGraph`,
  triton kernels.

Invariants:
- `compiled_step` is True when the trace or the counters show compiled code running in the window,
  False when neither does (a compiled object in the frame alone is a hint: it may never be called),
  None when no trace of the window could be read.
- Nothing here imports `torch._dynamo`: a program that never used it does not pay for it, and its
  absence from `sys.modules` is itself the answer for the counters.
- Stdlib only (the trace is scanned as bytes, in chunks, without parsing it).
"""

from __future__ import annotations

import re
import sys
from typing import Any

# The quote in front anchors each marker at the start of an event name (or a kernel name), so
# "autograd::engine::evaluate_function: CompiledFunctionBackward" is not a second forward call.
_MARKERS = {
    b'"Torch-Compiled Region': "Torch-Compiled Region",
    b'"TorchDynamo Cache Lookup"': "TorchDynamo Cache Lookup",
    b'"CompiledFunction"': "CompiledFunction",
    b'"## Call CompiledFxGraph': "CompiledFxGraph call",
    b'"triton_': "triton kernel",
}
_MARKER_RE = re.compile(b"|".join(re.escape(m) for m in _MARKERS))
_LONGEST = max(map(len, _MARKERS))
_CHUNK = 8 << 20


def _never_compiling() -> bool:
    return False


def compiling_probe():
    """torch's "is torch.compile tracing the caller?" for the rewritten code's `compiling()`:
    `torch.compiler.is_compiling` (torch >= 2.3), else `torch._utils.is_compiling`, both of which
    Dynamo folds to True while it traces; a torch with neither compiles through the labels' graph
    breaks as before. Looked up in the loaded torch only: nothing is imported here."""
    torch = sys.modules.get("torch")
    for owner, name in (("compiler", "is_compiling"), ("_utils", "is_compiling")):
        probe = getattr(getattr(torch, owner, None), name, None)
        if callable(probe):
            return probe
    return _never_compiling


def dynamo_counters() -> dict[str, int] | None:
    """dynamo's compilation counters now; None when the program never loaded torch._dynamo."""
    utils = sys.modules.get("torch._dynamo.utils")
    counters = getattr(utils, "counters", None)
    if counters is None:
        return None
    try:
        return {
            "frames_compiled": int(counters["frames"]["total"]),
            "frames_ok": int(counters["frames"]["ok"]),
            "graphs": int(counters["stats"]["unique_graphs"]),
            "graph_breaks": int(sum(counters["graph_break"].values())),
        }
    except Exception:  # a torch whose counters look different: say nothing rather than guess
        return None


def trace_markers(paths: list[str]) -> dict[str, int] | None:
    """Occurrences of each compiled-code marker in the traces; None when none could be read."""
    found = {name: 0 for name in _MARKERS.values()}
    read_any = False
    for path in paths:
        try:
            with open(path, "rb") as f:
                tail = b""
                while True:
                    chunk = f.read(_CHUNK)
                    if not chunk:
                        break
                    buf = tail + chunk
                    for m in _MARKER_RE.finditer(buf):
                        if m.end() > len(tail):  # a match wholly inside the carried tail was counted already
                            found[_MARKERS[m.group()]] += 1
                    tail = buf[-(_LONGEST - 1):]
            read_any = True
        except OSError:
            continue
    return found if read_any else None


def _delta(before: dict[str, int] | None, after: dict[str, int] | None) -> dict[str, int] | None:
    if after is None:
        return None
    before = before or {}
    return {k: v - before.get(k, 0) for k, v in after.items()}


def record(observed: dict[str, Any], counters_at_window_start: dict[str, int] | None,
           counters_at_window_end: dict[str, int] | None, traces: list[str]) -> dict[str, Any]:
    """The scenario's `torch_compile` record (see the module docstring for `compiled_step`)."""
    objects = [{"name": m["name"], "kind": "module", "type": m.get("type")}
               for m in observed.get("models") or [] if m.get("compiled")]
    objects += [{"name": name, "kind": "function"} for name in observed.get("compiled_functions") or []]
    markers = trace_markers(traces) if traces else None
    in_window = _delta(counters_at_window_start, counters_at_window_end)
    evidence: list[str] = []
    for obj in objects:
        evidence.append(f"{obj['kind']} `{obj['name']}` in the step's frame is compiled")
    if counters_at_window_start and counters_at_window_start["frames_compiled"] > 0:
        evidence.append(f"dynamo compiled {counters_at_window_start['frames_compiled']} frame(s) before the window")
    if in_window and in_window["frames_compiled"] > 0:
        evidence.append(f"dynamo compiled {in_window['frames_compiled']} frame(s) during the window")
    seen = {name: n for name, n in (markers or {}).items() if n}
    if seen:
        evidence.append("the window's trace holds " + ", ".join(f"{n} {name}" for name, n in seen.items()))
    ran_in_window = bool(seen) or bool(in_window and in_window["frames_compiled"] > 0)
    if ran_in_window:
        compiled_step: bool | None = True
    elif markers is None:
        compiled_step = None
        evidence.append("no trace of the window could be read")
    else:
        compiled_step = False
        if objects:
            evidence.append("but no compiled code ran in the window")
    return {
        "compiled_step": compiled_step,
        "evidence": evidence,
        "compiled_objects": objects,
        "trace_markers": markers,
        "dynamo": None if counters_at_window_end is None and counters_at_window_start is None else {
            "before_window": counters_at_window_start,
            "during_window": in_window,
        },
    }
