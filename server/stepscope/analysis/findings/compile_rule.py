"""Findings from torch.compile's own records: compilations inside the window and graph breaks.

Invariants: it reads only `report["compiled_code"]` (the compilations torch made during the active
steps, and the graph breaks it recorded, from the run's compile.json); each finding sits on the line
torch names (a graph break's statement; a compiled function's first line), else on the loop header.
A compilation inside the window is measured as part of a step; a graph break splits a compiled
function into several graphs with Python in between, every step; a break torch could not handle
("Skipping the function and falling back to eager") leaves the whole function eager, every step: a
warning wherever it happened.
"""

from __future__ import annotations

from .common import Anchor, finding, machine_words
from .thresholds import Thresholds

_FALLBACK = "falling back to eager"  # torch's words when Dynamo skips a whole function (torch 2.x)


def _where(item: dict, anchor: Anchor) -> Anchor:
    return (item["file"], item["line"]) if item.get("file") and item.get("line") else anchor


def recompilation(report: dict, t: Thresholds, anchor: Anchor) -> list[dict]:
    record = report.get("compiled_code") or {}
    out = []
    steps = report.get("steps") or []
    for c in record.get("compilations") or []:
        step = c.get("step")
        which = f"the loop's step {step + 1} (counted from its first)" if isinstance(step, int) else "an active step"
        what = "recompiled" if c.get("recompile") else "compiled"
        reasons = c.get("reasons") or []
        why = f" because {'; '.join(reasons)}" if reasons else ""
        out.append(finding(
            "recompilation", _where(c, anchor),
            f"torch.compile {what} `{c.get('function') or 'a function'}` during {which}, inside the "
            f"{len(steps)}-step active window{why} ({machine_words(report)}): that step's time includes compiling.",
            "The step took a new path for the compiler (an input shape, dtype or Python value its guards did not "
            "expect): the window is not in a steady state, and recompiling may recur in the real run.",
            "Lengthen the warm-up (--warmup) so compilation ends before the window and compare the steps; if the "
            "reason is a changing shape, mark it dynamic (torch._dynamo.mark_dynamic) or pad to fixed sizes, and "
            "check the count of compilations over a longer run.",
            figures={"function": c.get("function"), "step": step, "reasons": reasons, "recompile": bool(c.get("recompile"))},
        ))
    return out


def graph_break(report: dict, t: Thresholds, anchor: Anchor) -> list[dict]:
    record = report.get("compiled_code") or {}
    out = []
    seen = set()
    for b in record.get("graph_breaks") or []:
        key = (b.get("file"), b.get("line"), b.get("reason"))
        if key in seen:
            continue
        seen.add(key)
        in_window = b.get("phase") == "active"
        reason = b.get("reason") or "no reason recorded"
        detail = f" ({b['detail']})" if b.get("detail") else ""
        fallback = _FALLBACK in reason.lower()
        when = "during the active window" if in_window else "before the window"
        if fallback:
            observation = (f"torch.compile gave up on the function at this line {when} and runs it eager, every "
                           f"step: {reason}{detail}.")
            hypothesis = ("Dynamo met a statement it can neither trace nor split the graph at (inside a `with` "
                          "block or a generator, for instance): none of this function's code is compiled, so "
                          "its kernels are eager kernels and nothing of it is fused.")
        else:
            observation = (f"torch.compile broke the graph at this line while compiling {when}"
                           f"{'' if in_window else '; the split graphs run in every step'}: {reason}{detail}.")
            hypothesis = ("This statement is something Dynamo cannot put in a graph (a print, a data-dependent "
                          "branch, an unsupported call): the compiled function runs as several graphs with Python "
                          "between them, and Inductor cannot fuse across the break.")
        out.append(finding(
            "graph-break", _where(b, anchor), observation, hypothesis,
            "Move the statement out of the compiled code or make it traceable, then check with "
            "torch._dynamo.explain (or TORCH_LOGS=graph_breaks) that the break is gone, and compare ms/step "
            "outside the profiler.",
            severity="warning" if in_window or fallback else "info",
            figures={"reason": b.get("reason"), "phase": b.get("phase"), "step": b.get("step"), "fallback": fallback},
        ))
    return out
