"""SS201 (a wall-clock duration around device work with no sync) and SS202 (`time.time()` durations).

A *timed interval* is `start = <clock>()` ... `<clock>() - start` (or `end - start` with `end` a
clock reading) in one function. Its start is the last assignment of `start` written above the
subtraction; the calls between the two lines are the timed work. SS201 needs the file to use CUDA,
visible device work in the interval (a model call, backward, an optimizer step, a torch op) and no
synchronisation there (a synchronize, CUDA events, or a call that copies to the host).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterator

from ..source.loops import BACKWARD, MODEL, OPTIMIZER, call_signal, terminal_name
from .context import FunctionFacts, ModuleContext
from .model import Diagnostic, Edit, Fix, make_diagnostic

_CLOCK_FUNCS = {
    "time.time": "time",
    "time.perf_counter": "perf_counter",
    "time.perf_counter_ns": "perf_counter",
    "time.monotonic": "monotonic",
    "time.monotonic_ns": "monotonic",
    "time.time_ns": "time",
    "timeit.default_timer": "perf_counter",
}
_SYNC_ATTRS = frozenset({"synchronize", "elapsed_time", "item", "cpu", "tolist", "numpy",
                         "wait_stream", "block_until_ready", "mark_step", "wait_event",
                         "wait_for_everyone", "barrier", "query"})


@dataclass
class TimedInterval:
    function: FunctionFacts
    start_line: int
    duration: ast.BinOp
    start_assigns: list[ast.Call]  # every clock call assigned to the start name in the function
    end_calls: list[ast.Call]  # clock calls in the subtraction / assigned to the end name
    clock_kinds: set[str]  # "time", "perf_counter", "monotonic"
    calls: list[ast.Call]  # calls strictly after the start line up to the duration line


def _clock_kind(node: ast.AST, ctx: ModuleContext) -> str | None:
    if isinstance(node, ast.Call) and not node.args:
        return _CLOCK_FUNCS.get(ctx.dotted(node.func) or "")
    return None


def timed_intervals(ctx: ModuleContext) -> list[TimedInterval]:
    cached = getattr(ctx, "_timed_intervals", None)
    if cached is not None:
        return cached
    intervals: list[TimedInterval] = []
    for facts in ctx.functions.values():
        if not any(_clock_kind(c, ctx) for c in facts.calls):
            continue
        clock_assigns: dict[str, list[tuple[int, ast.Call, str]]] = {}
        for node in facts.assigns:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name):
                kind = _clock_kind(node.value, ctx)
                if kind:
                    clock_assigns.setdefault(node.targets[0].id, []).append(
                        (node.lineno, node.value, kind))  # type: ignore[arg-type]
        subtractions = facts.subtractions
        for sub in subtractions:
            if not isinstance(sub.right, ast.Name) or sub.right.id not in clock_assigns:
                continue
            before = [a for a in clock_assigns[sub.right.id] if a[0] < sub.lineno]
            if not before:
                continue
            start_line, _start_call, start_kind = max(before, key=lambda a: a[0])
            end_kind = _clock_kind(sub.left, ctx)
            end_calls: list[ast.Call] = []
            if end_kind:
                end_calls = [sub.left]  # type: ignore[list-item]
            elif isinstance(sub.left, ast.Name) and sub.left.id in clock_assigns:
                ends = [a for a in clock_assigns[sub.left.id] if a[0] <= sub.lineno]
                if not ends:
                    continue
                end_kind = max(ends, key=lambda a: a[0])[2]
                end_calls = [a[1] for a in clock_assigns[sub.left.id]]
            else:
                continue
            calls = [c for c in facts.calls if start_line < c.lineno <= sub.lineno]
            intervals.append(TimedInterval(
                function=facts, start_line=start_line, duration=sub,
                start_assigns=[a[1] for a in clock_assigns[sub.right.id]],
                end_calls=end_calls, clock_kinds={start_kind, end_kind}, calls=calls))
    ctx._timed_intervals = intervals  # type: ignore[attr-defined]
    return intervals


def _is_device_work(call: ast.Call, ctx: ModuleContext) -> bool:
    if call_signal(call, model_names=ctx.model_names) in (MODEL, BACKWARD, OPTIMIZER):
        return True
    dotted = ctx.dotted(call.func) or ""
    if isinstance(call.func, ast.Attribute) and call.func.attr in ("to", "cuda"):
        return True
    if dotted.startswith(("torch.nn.functional.", "F.")):
        return True
    if dotted.startswith("torch.") and dotted.count(".") == 1 and dotted.split(".")[1] in {
            "matmul", "mm", "bmm", "einsum", "conv2d", "softmax", "randn", "rand", "cat",
            "stack", "sum", "mean", "addmm", "baddbmm", "exp", "log", "sort", "topk", "cdist"}:
        return True
    return False


def _is_sync(call: ast.Call, ctx: ModuleContext) -> bool:
    name = terminal_name(call.func) or ""
    if name in _SYNC_ATTRS or name == "Event":
        return True
    if "sync" in name.lower() and "async" not in name.lower():
        return True  # a helper such as `cuda_sync()` or `_sync(t, dev)`
    if isinstance(call.func, ast.Name) and call.func.id in ("float", "int", "print", "bool"):
        return True
    if name == "to" and any(isinstance(a, ast.Constant) and a.value == "cpu"
                            for a in [*call.args, *(k.value for k in call.keywords)]):
        return True  # `.to("cpu")` copies to the host and waits
    return False


def _uses_cuda(facts: FunctionFacts, ctx: ModuleContext) -> bool:
    """The function (or, at module level, the module) names CUDA itself."""
    cached = getattr(facts, "_uses_cuda", None)
    if cached is None:
        node = facts.node
        if isinstance(node, ast.Module):
            cached = ctx.mentions_cuda
        else:
            first, last = node.lineno, node.end_lineno or node.lineno
            cached = any("cuda" in line for line in ctx.lines[first - 1:last])
        facts._uses_cuda = cached  # type: ignore[attr-defined]
    return cached


def check_ss201(ctx: ModuleContext, path: str) -> Iterator[Diagnostic]:
    if not ctx.mentions_cuda:
        return
    for interval in timed_intervals(ctx):
        if not _uses_cuda(interval.function, ctx):
            continue  # the timed work may run on the CPU: nothing to wait for
        if not any(_is_device_work(c, ctx) for c in interval.calls):
            continue
        if any(_is_sync(c, ctx) for c in interval.calls):
            continue
        yield make_diagnostic(
            "SS201",
            f"this duration (timed from line {interval.start_line}) measures how long the CPU "
            f"took to queue the device work, not the work itself; call torch.cuda.synchronize() "
            f"before reading the clock, or time the device with torch.cuda.Event",
            path, ctx.span(interval.duration))


def check_ss202(ctx: ModuleContext, path: str) -> Iterator[Diagnostic]:
    intervals = timed_intervals(ctx)
    for interval in intervals:
        if "time" not in interval.clock_kinds:
            continue
        fix = _perf_counter_fix(_connected(interval, intervals), ctx)
        yield make_diagnostic(
            "SS202",
            "`time.time()` follows the wall clock, which can jump (NTP, daylight saving) and has "
            "coarse resolution on some systems; use time.perf_counter() for durations",
            path, ctx.span(interval.duration), fixes=(fix,) if fix else ())


def _connected(interval: TimedInterval, intervals: list[TimedInterval]) -> list[TimedInterval]:
    """Intervals that share a clock reading with `interval`: a fix must convert them together."""
    group = [interval]
    calls = {id(c) for c in [*interval.start_assigns, *interval.end_calls]}
    changed = True
    while changed:
        changed = False
        for other in intervals:
            if other in group or other.function is not interval.function:
                continue
            other_calls = {id(c) for c in [*other.start_assigns, *other.end_calls]}
            if other_calls & calls:
                group.append(other)
                calls |= other_calls
                changed = True
    return group


def _perf_counter_fix(group: list[TimedInterval], ctx: ModuleContext) -> Fix | None:
    edits: dict[tuple[int, int], Edit] = {}
    calls = [c for interval in group for c in [*interval.start_assigns, *interval.end_calls]]
    for call in calls:
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and ctx.imports.get(func.value.id, func.value.id) == "time"
                and func.attr == "time"):
            if _clock_kind(call, ctx) == "time":
                return None  # `from time import time`: renaming needs an import edit, skip
            continue
        line, col, end_line, end_col = ctx.span(func)
        edits[(line, col)] = Edit(line, col, end_line, end_col, f"{func.value.id}.perf_counter")
    if not edits:
        return None
    return Fix("Use time.perf_counter() for this duration",
               tuple(edits[k] for k in sorted(edits)))
