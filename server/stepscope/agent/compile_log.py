"""torch.compile's own records of a profile run (the run folder's `compile.json`).

What torch's compiler says while the program runs, kept for the analysis to attribute compiled code
to source lines and to name the compilations that happened inside the window:
- Inductor's provenance (torch >= 2.8 with provenance tracking on): for each compiled graph, each
  generated kernel (`triton_poi_fused_add_0`, `cpp_fused_gelu_1`) and extern kernel
  (`extern_kernels.mm`) with a debug handle in generation order, and the stack traces of the FX
  nodes it was made from (backward nodes carry their forward node's stack). The graph is named by
  its FX graph cache key, the key the trace's `## Call CompiledFxGraph <key> ##` region shows.
- Dynamo's graph breaks (the file:line torch names, and why) and every frame compilation
  (recompilations with their reasons), each with the step and schedule phase it happened in.

How: `enable()` turns on provenance tracking and, for Inductor's C++ kernels on the CPU, their
profiler records (environment variables read when Inductor's config is first imported; the config
itself if it already is), never overriding a value the user set. `CompileLog` is a logging handler
on torch's structured-trace logger (`torch.__trace`, what TORCH_TRACE writes) that keeps only the
records above; torch builds a record only while that logger has a handler, so the cost is paid at
compile time, by Stepscope's runs only.

Invariants:
- Stdlib only; nothing here imports torch's compiler: a program that never compiles pays nothing
  and gets no `compile.json`.
- A record torch writes in a shape this module does not know is skipped, never fatal.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from typing import Any, Callable

PROVENANCE_ENV = "INDUCTOR_PROVENANCE"
CPP_KERNEL_PROFILE_ENV = "TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE"
TRACE_LOGGER = "torch.__trace"

_PROVENANCE_ARTIFACT = "inductor_provenance_tracking_kernel_stack_traces"
_CACHE_ARTIFACTS = ("fx_graph_cache_miss", "fx_graph_cache_hit", "fx_graph_cache_bypass")
_BREAK_AT = re.compile(r"Graph break in user code at (?P<file>.+):(?P<line>[0-9]+)\s*$")
MAX_RECORDS = 2000  # graphs, breaks and compilations kept (a program recompiling forever stays bounded)


def enable(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """Turn on what the attribution needs, unless the user chose otherwise; say what is in force."""
    env = os.environ if environ is None else environ
    said = {}
    for key, name in ((PROVENANCE_ENV, "provenance"), (CPP_KERNEL_PROFILE_ENV, "cpp_kernel_profile")):
        if key in env:
            said[name] = f"set by the program's environment ({key}={env[key]})"
        else:
            env[key] = "1"
            said[name] = "on for this run"
    config = sys.modules.get("torch._inductor.config")  # already imported: the variables came too late
    if config is not None and environ is None:
        trace, cpp = getattr(config, "trace", None), getattr(config, "cpp", None)
        if said["provenance"] == "on for this run" and hasattr(trace, "provenance_tracking_level"):
            trace.provenance_tracking_level = max(1, int(trace.provenance_tracking_level or 0))
        if said["cpp_kernel_profile"] == "on for this run" and hasattr(cpp, "enable_kernel_profile"):
            cpp.enable_kernel_profile = True
    return said


class CompileLog(logging.Handler):
    """Keeps the compiler's records named in the module docstring. `where()` says the step running
    now: (index or None, phase), the phase one of the schedule's or "before" the first step."""

    def __init__(self, where: Callable[[], tuple[int | None, str]]) -> None:
        super().__init__(level=logging.DEBUG)
        self._where = where
        self._strings: dict[int, str] = {}
        self._pending_kernels: dict[str, Any] | None = None
        self._pending_reasons: list[str] = []
        self.graphs: list[dict[str, Any]] = []
        self.graph_breaks: list[dict[str, Any]] = []
        self.compiles: list[dict[str, Any]] = []
        self.skipped = 0

    # -- logging.Handler -------------------------------------------------------------------------
    def emit(self, record: logging.LogRecord) -> None:
        try:
            meta = getattr(record, "metadata", None)
            if isinstance(meta, dict):
                self._take(meta, getattr(record, "payload", None))
        except Exception:  # a record of another shape: never break the program's compilation
            self.skipped += 1

    def _take(self, meta: dict[str, Any], payload: Any) -> None:
        if "str" in meta:
            text, sid = meta["str"]
            self._strings[int(sid)] = str(text)
        elif "dynamo_start" in meta:
            self._compile_started(meta)
        elif "artifact" in meta:
            name = (meta["artifact"] or {}).get("name")
            if name == _PROVENANCE_ARTIFACT:
                kernels = json.loads(payload) if isinstance(payload, str) else payload
                if isinstance(kernels, dict) and kernels:
                    self._pending_kernels = {"frame_id": meta.get("frame_id"),
                                             "frame_compile_id": meta.get("frame_compile_id"),
                                             "kernels": kernels}
            elif name in _CACHE_ARTIFACTS:
                self._graph_compiled(payload)
            elif name == "dynamo_graph_break_reason":
                self._graph_break(meta, payload)
            elif name == "recompile_reasons":  # one reason comes as plain text, several as a JSON list
                reasons = payload
                if isinstance(payload, str) and payload.lstrip().startswith("["):
                    reasons = json.loads(payload)
                self._pending_reasons = [str(r) for r in (reasons if isinstance(reasons, list) else [reasons])]

    def _when(self) -> dict[str, Any]:
        index, phase = self._where()
        return {"step": index, "phase": phase}

    def _compile_started(self, meta: dict[str, Any]) -> None:
        stack = meta["dynamo_start"].get("stack") or []
        frame = stack[-1] if stack else {}
        entry = {"frame_id": meta.get("frame_id"), "frame_compile_id": meta.get("frame_compile_id"),
                 "function": frame.get("name"), "file": self._strings.get(frame.get("filename"), frame.get("filename")),
                 "line": frame.get("line"), "reasons": self._pending_reasons, **self._when()}
        self._pending_reasons = []
        if len(self.compiles) < MAX_RECORDS:
            self.compiles.append(entry)

    def _graph_compiled(self, payload: Any) -> None:
        """A graph's cache record follows its provenance: it names the graph by its cache key."""
        pending, self._pending_kernels = self._pending_kernels, None
        if pending is None:
            return
        info = json.loads(payload) if isinstance(payload, str) else payload
        pending["key"] = info.get("key") if isinstance(info, dict) else None
        if len(self.graphs) < MAX_RECORDS:
            self.graphs.append(pending)

    def _graph_break(self, meta: dict[str, Any], payload: Any) -> None:
        lines = str(payload or "").splitlines()
        where = _BREAK_AT.match(lines[0].strip()) if lines else None
        reason = next((x.split(":", 1)[1].strip() for x in lines[1:] if x.startswith("Graph Break Reason:")), None)
        detail = next((x.strip() for x in lines[1:] if x.strip() and not x.startswith("Graph Break Reason:")), None)
        if len(self.graph_breaks) < MAX_RECORDS:
            self.graph_breaks.append({
                "file": where.group("file") if where else None, "line": int(where.group("line")) if where else None,
                "reason": reason, "detail": detail, "frame_id": meta.get("frame_id"), **self._when()})

    # -- the record --------------------------------------------------------------------------------
    def flush_pending(self) -> None:
        """A graph whose cache record never came (caching off): kept without its key."""
        if self._pending_kernels is not None:
            self.graphs.append({**self._pending_kernels, "key": None})
            self._pending_kernels = None

    def record(self, enabled: dict[str, Any]) -> dict[str, Any] | None:
        """What `compile.json` holds; None when the program compiled nothing."""
        self.flush_pending()
        if not (self.graphs or self.graph_breaks or self.compiles):
            return None
        torch = sys.modules.get("torch")
        return {"torch": getattr(torch, "__version__", None), "enabled": enabled, "graphs": self.graphs,
                "graph_breaks": self.graph_breaks, "compiles": self.compiles, "records_skipped": self.skipped}


def install(where: Callable[[], tuple[int | None, str]]) -> CompileLog:
    handler = CompileLog(where)
    logger = logging.getLogger(TRACE_LOGGER)
    if logger.level == logging.NOTSET or logger.level > logging.DEBUG:
        logger.setLevel(logging.DEBUG)  # torch keeps this logger at DEBUG once its logging is set up
    logger.addHandler(handler)
    return handler


def uninstall(handler: CompileLog) -> None:
    logging.getLogger(TRACE_LOGGER).removeHandler(handler)
