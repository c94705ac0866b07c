"""SS201 (a wall-clock duration around device work with no sync) and SS202 (`time.time()` durations).

A *timed interval* is `start = <clock>()` ... `<clock>() - start` (or `end - start` with `end` a
clock reading) in one function. Its start is the last assignment of `start` written above the
subtraction, its end the clock reading; the calls between the two are the timed work (a call that
encloses the end reading, such as the `print(...)` the duration is computed in, runs after it).

SS201 reports an interval of a file that uses CUDA, in a function that names CUDA or is handed a
device, when it times device work directly (a model call, backward, an optimizer step, a torch
op: not a bare `.to()`, a queue, compilation, or RPC work another process runs) and nothing in it
makes the host wait: a synchronize, CUDA events, a read of a value on the host (`.item()`,
`.cpu()`, `float(t)`, `math.isnan(t)`, a tensor in an `if`, a logger given a tensor,
`metric.compute()`), a mask or CPU-tensor index, a data-sized result, an RPC wait, a blocking
copy of host data first in a per-step interval (`host_waits`), or a function of the same module
that does one of these. It leaves alone what measures a rate over many steps, where a missing
sync shifts only the last step: a chained timer (`end = time.time()` again after the duration, or
`t0 = t1`) whose durations are accumulated, a start taken before the loop the duration is
computed in and not taken again in it, and an interval that holds a loop over a data loader or a
`while` loop (a whole epoch or run).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterator

from ..source.loops import BACKWARD, OPTIMIZER, call_signal, terminal_name
from .context import _RESULT_CALL, FunctionFacts, ModuleContext, runs_model
from .host_waits import (copies_host_data, indexes_by_data, is_blocking_copy_to_device,
                         is_device_name, is_remote_work, names_a_device, nodes_between, sizes_by_data,
                         waits_for_rpc)
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
    calls: list[ast.Call]  # the timed work: calls after the start reading, before the end reading
    end_line: int = 0  # line of the end reading


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
                end_line = sub.lineno
            elif isinstance(sub.left, ast.Name) and sub.left.id in clock_assigns:
                ends = [a for a in clock_assigns[sub.left.id] if a[0] <= sub.lineno]
                if not ends:
                    continue
                end_line, _end_call, end_kind = max(ends, key=lambda a: a[0])
                end_calls = [a[1] for a in clock_assigns[sub.left.id]]
            else:
                continue
            calls = [c for c in facts.calls if start_line < c.lineno <= end_line
                     and not (end_line == sub.lineno and _encloses(c, sub))]
            intervals.append(TimedInterval(
                function=facts, start_line=start_line, duration=sub,
                start_assigns=[a[1] for a in clock_assigns[sub.right.id]],
                end_calls=end_calls, clock_kinds={start_kind, end_kind}, calls=calls,
                end_line=end_line))
    ctx._timed_intervals = intervals  # type: ignore[attr-defined]
    return intervals


def _encloses(call: ast.Call, node: ast.AST) -> bool:
    """`call` contains `node` (it runs after `node` is evaluated)."""
    return (call.lineno, call.col_offset) <= (node.lineno, node.col_offset) and (  # type: ignore[attr-defined]
        (call.end_lineno or 0, call.end_col_offset or 0)
        >= (node.end_lineno or 0, node.end_col_offset or 0))  # type: ignore[attr-defined]


def _is_device_work(call: ast.Call, ctx: ModuleContext) -> bool:
    if is_remote_work(call, ctx):
        return False  # RPC: another process runs it
    if call_signal(call, model_names=ctx.model_names) in (BACKWARD, OPTIMIZER) \
            or runs_model(call, ctx.model_names):
        return True
    dotted = ctx.dotted(call.func) or ""
    if dotted.startswith(("torch.nn.functional.", "F.")):
        return True
    if dotted.startswith("torch.") and dotted.count(".") == 1 and dotted.split(".")[1] in {
            "matmul", "mm", "bmm", "einsum", "conv2d", "softmax", "randn", "rand", "cat",
            "stack", "sum", "mean", "addmm", "baddbmm", "exp", "log", "sort", "topk", "cdist"}:
        return True
    return False


_LOGGER_CALLS = frozenset({"add_scalar", "add_scalars", "log", "log_metrics", "log_metric",
                           "log_dict", "add_histogram"})


def _is_sync(call: ast.Call, ctx: ModuleContext, facts: FunctionFacts,
             syncing: frozenset[str]) -> bool:
    """The call makes the host wait for the device (or may: reading a value on the host)."""
    name = terminal_name(call.func) or ""
    if name in _SYNC_ATTRS or name == "Event" or name == "compute" or name == "generate":
        return True  # `model.generate(...)` reads every new token on the host to decide to stop
    if sizes_by_data(call, ctx) or waits_for_rpc(call, ctx):
        return True  # `torch.nonzero(m)` reads a count; `fut.wait()` waits for remote work
    if any(k.arg in ("prompt", "prompts") for k in call.keywords):
        return True  # `pipe(prompt=...)`: a generation pipeline hands back images or text
    lowered = name.lower()
    if "sync" in lowered and "async" not in lowered and "no_sync" not in lowered \
            and "no_backward_sync" not in lowered:
        return True  # a helper such as `cuda_sync()` or `_sync(t, dev)`
    if isinstance(call.func, ast.Name) and call.func.id in ("float", "int", "bool"):
        return True
    if isinstance(call.func, ast.Name) and call.func.id == "print":
        return not all(_shows_only_clock_values(a, ctx, facts) for a in call.args)
    if name == "to" and any(
            (isinstance(a, ast.Constant) and a.value == "cpu")
            or (isinstance(a, (ast.Name, ast.Attribute)) and "cpu" in (terminal_name(a) or "").lower())
            for a in [*call.args, *(k.value for k in call.keywords)]):
        return True  # `.to("cpu")`, `.to(cpu_device)` copy to the host and wait
    dotted = ctx.dotted(call.func) or ""
    if dotted.startswith(("math.", "numpy.", "np.")) and call.args:
        return True  # `math.isnan(loss)`: a value read on the host
    if name in _LOGGER_CALLS and any(
            isinstance(a, ast.Attribute) and a.attr == "data" or ctx.is_tensor_expr(a, facts)
            for a in [*call.args, *(k.value for k in call.keywords)]):
        return True  # a logger given a tensor reads it
    if name in syncing and (isinstance(call.func, ast.Name) or (
            isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
            and call.func.value.id in ("self", "cls"))):
        return True  # a function of this module that reads a value on the host
    return False


def _runs_on_a_device(facts: FunctionFacts, ctx: ModuleContext) -> bool:
    """The module names CUDA, and the function either names it too or works with a device it is
    handed: a parameter that names a device (`device`, `dev`, `gpu`, `local_rank`), `.to(device)`,
    `.to(self.device)`, `.cuda()` or `device=...` (a device picked at module level or in
    `__main__` and passed down). A module that never names CUDA has no device work to time."""
    if not ctx.mentions_cuda:
        return False
    return _uses_cuda(facts, ctx) or _handed_a_device(facts)


def _handed_a_device(facts: FunctionFacts) -> bool:
    node = facts.node
    if isinstance(node, ast.Module):
        return False
    params = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
    if any(is_device_name(p.arg) for p in params):
        return True
    for call in facts.calls:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "cuda":
            return True
        if isinstance(func, ast.Attribute) and func.attr == "to" and call.args \
                and names_a_device(call.args[0]):
            return True
        if any(k.arg == "device" and names_a_device(k.value) for k in call.keywords):
            return True
    return False


def _shows_only_clock_values(node: ast.AST, ctx: ModuleContext, facts: FunctionFacts) -> bool:
    """`node` is text made of constants and clock values only (`f"step: {dt:.3f}s"` with `dt` a
    difference of clock readings): printing it reads nothing from the device."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.JoinedStr):
        return all(_shows_only_clock_values(v, ctx, facts) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return _shows_only_clock_values(node.value, ctx, facts)
    if isinstance(node, ast.BinOp):
        return _shows_only_clock_values(node.left, ctx, facts) \
            and _shows_only_clock_values(node.right, ctx, facts)
    if _clock_kind(node, ctx):
        return True
    return isinstance(node, ast.Name) and node.id in _clock_value_names(facts, ctx)


def _clock_value_names(facts: FunctionFacts, ctx: ModuleContext) -> frozenset[str]:
    """Names the function sets only to Python numbers made of clock readings and constants
    (`t0 = time.time()`, `dt = time.time() - t0`, `ms = dt * 1000`): never a tensor."""
    cached = getattr(facts, "_clock_value_names", None)
    if cached is not None:
        return cached
    values: dict[str, list[ast.expr | None]] = {}
    for assign in facts.assigns:
        targets = assign.targets if isinstance(assign, ast.Assign) else [assign.target]
        for target in targets:
            if isinstance(target, ast.Name):
                values.setdefault(target.id, []).append(
                    None if isinstance(assign, ast.AugAssign) else assign.value)
    names: set[str] = set()
    for _ in range(3):  # `dt` from `t0`, `ms` from `dt`
        for name, assigned in values.items():
            if name not in names and all(
                    v is not None and _clock_arithmetic(v, names | {name}, ctx) for v in assigned):
                names.add(name)
    result = frozenset(names)
    facts._clock_value_names = result  # type: ignore[attr-defined]
    return result


def _clock_arithmetic(node: ast.AST, clock_names: set[str], ctx: ModuleContext) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float))
    if isinstance(node, ast.BinOp):
        return _clock_arithmetic(node.left, clock_names, ctx) \
            and _clock_arithmetic(node.right, clock_names, ctx)
    if isinstance(node, ast.Name):
        return node.id in clock_names
    return _clock_kind(node, ctx) is not None


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
    if not ctx.mentions_cuda or ctx.other_framework:
        return
    for interval in timed_intervals(ctx):
        if not _runs_on_a_device(interval.function, ctx) or measures_a_rate(interval, ctx) \
                or _on_the_cpu(interval, ctx):
            continue
        if not any(_is_device_work(c, ctx) for c in interval.calls):
            continue
        if any(_compiles(c, ctx) for c in interval.calls):
            continue  # timing compilation: seconds of host work
        if _host_waits(interval, ctx) or _starts_with_a_host_copy(interval, ctx):
            continue
        yield make_diagnostic(
            "SS201",
            f"this duration (timed from line {interval.start_line}) measures how long the CPU "
            f"took to queue the device work, not the work itself; call torch.cuda.synchronize() "
            f"before reading the clock, or time the device with torch.cuda.Event",
            path, ctx.span(interval.duration))


def _host_waits(interval: TimedInterval, ctx: ModuleContext) -> bool:
    """Something between the readings makes the host wait for the device: a sync call, a tensor
    read in a test, a mask or CPU-tensor index. For a chained timer whose start is taken again
    later in the loop, the rest of the loop body after that reading counts too: it runs before
    the next end reading, in the same link of the chain."""
    facts = interval.function
    syncing = ctx.syncing_functions()
    rest = _rest_of_the_chain(interval)
    calls = interval.calls + [c for c in facts.calls if rest and rest[0] < c.lineno <= rest[1]]
    if any(_is_sync(c, ctx, facts, syncing) for c in calls):
        return True
    ranges = [(interval.start_line, interval.end_line), *([rest] if rest else [])]
    return any(_reads_a_tensor(facts, first, last, ctx) for first, last in ranges) \
        or _indexes_by_data(interval, ranges, ctx)


def _rest_of_the_chain(interval: TimedInterval) -> tuple[int, int] | None:
    """(line of the start reading taken again after the duration, last line of the loop) for a
    chained timer inside a loop; None for any other interval."""
    sub_line = interval.duration.lineno
    around = [n for n in interval.function.loops
              if n.lineno < sub_line <= (n.end_lineno or n.lineno)]
    innermost = max(around, key=lambda n: n.lineno, default=None)
    if innermost is None:
        return None
    last = innermost.end_lineno or innermost.lineno
    again = [a.lineno for a in interval.start_assigns if sub_line < a.lineno <= last]
    return (min(again), last) if again else None


def _indexes_by_data(interval: TimedInterval, ranges: list[tuple[int, int]],
                     ctx: ModuleContext) -> bool:
    """A boolean-mask or CPU-tensor index of a device tensor in the line `ranges` (`x[x > 0]`):
    the host reads a count from the device, which waits for the work queued before it."""
    nodes = [n for first, last in ranges for n in nodes_between(interval.function, first, last)
             if not _after_the_end_reading(n, interval)]
    return indexes_by_data(nodes, interval.function, ctx)


def _after_the_end_reading(node: ast.AST, interval: TimedInterval) -> bool:
    """`node` is on the subtraction's line at or after it (it runs after the end reading)."""
    sub = interval.duration
    return interval.end_line == sub.lineno and getattr(node, "lineno", 0) == sub.lineno \
        and getattr(node, "col_offset", 0) >= sub.col_offset


def _starts_with_a_host_copy(interval: TimedInterval, ctx: ModuleContext) -> bool:
    """A per-step interval (its duration is computed inside a loop) whose first work is a blocking
    copy of host data to the device: the copy waits for the previous step's queued work, so each
    reading ends where the device had caught up, as a chained timer's does."""
    sub_line = interval.duration.lineno
    if not any(n.lineno < sub_line <= (n.end_lineno or n.lineno) for n in interval.function.loops):
        return False
    device_work = [c for c in interval.calls if _is_device_work(c, ctx)]
    for call in interval.calls:
        if is_blocking_copy_to_device(call, ctx) and copies_host_data(call, interval.function, ctx) \
                and not any(_runs_before(work, call) for work in device_work):
            return True
    return False


def _runs_before(first: ast.Call, then: ast.Call) -> bool:
    """`first` ends, in the text, before `then` starts: Python evaluates it first (a call that
    encloses `then`, such as `model(x.cuda())`, runs after it)."""
    return ((first.end_lineno or 0), (first.end_col_offset or 0)) <= (then.lineno, then.col_offset)


def _compiles(call: ast.Call, ctx: ModuleContext) -> bool:
    return (ctx.dotted(call.func) or "") in ("torch.compile", "torch.jit.script",
                                               "torch.jit.trace", "torch.export.export")


def measures_a_rate(interval: TimedInterval, ctx: ModuleContext) -> bool:
    """The interval times many steps, or tiles a loop with its neighbours: a missing sync only
    moves the last step's queued work to the next reading (see the module docstring)."""
    start_name = interval.duration.right.id  # type: ignore[attr-defined]
    sub_line = interval.duration.lineno
    for assign in interval.function.assigns:
        if isinstance(assign, ast.Assign) and isinstance(assign.value, ast.Name) and any(
                isinstance(t, ast.Name) and t.id == start_name for t in assign.targets):
            return True  # `t0 = t1`: chained readings
    loops = interval.function.loops
    around = [n for n in loops if n.lineno < sub_line <= (n.end_lineno or n.lineno)]
    innermost = max(around, key=lambda n: n.lineno, default=None)
    if innermost is not None:
        if _rest_of_the_chain(interval) is not None:
            if not _kept_per_step(interval):
                return True  # `meter.update(time.time() - end); end = time.time()`: a rate
        elif not innermost.lineno < interval.start_line <= (innermost.end_lineno or 0):
            return True  # started before the loop: a running total over many steps
    for loop in loops:
        if interval.start_line < loop.lineno and (loop.end_lineno or 0) <= interval.end_line:
            pos = ctx.loop_by_pos.get((loop.lineno, loop.col_offset))
            if isinstance(loop, ast.While) or (pos is not None and (
                    pos.header_fetch or ctx.loop_role(pos) == "training")):
                return True  # a loop over a data loader, a `while`, training steps: a run
    if any(_RESULT_CALL.match(terminal_name(c.func) or "") or "epoch" in (
            terminal_name(c.func) or "").lower() for c in interval.calls):
        return True  # `train_model(...)`, `train_one_epoch(...)`: a whole run
    return False


_ACCUMULATORS = frozenset({"update", "append", "add", "extend", "appendleft"})


def _kept_per_step(interval: TimedInterval) -> bool:
    """Each duration of a chained timer is kept or shown on its own (`dt = time.time() - t0`,
    `print(time.time() - t0)`), not accumulated (`meter.update(...)`, `times.append(...)`,
    `total += ...`): a single link of the chain is launch time, only their sum is the run's."""
    sub = interval.duration
    facts = interval.function
    enclosing = [c for c in facts.calls if _encloses(c, sub) and c is not sub]
    if any(terminal_name(c.func) in _ACCUMULATORS for c in enclosing):
        return False
    for assign in facts.assigns:
        if assign.value is not sub:
            continue
        if isinstance(assign, ast.AugAssign):
            return False  # `total += time.time() - t0`
        targets = assign.targets if isinstance(assign, ast.Assign) else [assign.target]
        names = {t.id for t in targets if isinstance(t, ast.Name)}
        return bool(names) and not _accumulated(names, facts)
    return bool(enclosing)  # `print(f"step took {time.time() - t0}")`


def _accumulated(names: set[str], facts: FunctionFacts) -> bool:
    """One of `names` is added to a total or handed to a meter or a list in the function."""
    for call in facts.calls:
        if terminal_name(call.func) in _ACCUMULATORS and any(
                isinstance(a, ast.Name) and a.id in names for a in call.args):
            return True
    for assign in facts.assigns:
        if isinstance(assign, ast.AugAssign) and any(
                isinstance(n, ast.Name) and n.id in names for n in ast.walk(assign.value)):
            return True
    return False


def _on_the_cpu(interval: TimedInterval, ctx: ModuleContext) -> bool:
    """The interval sits in the branch for the CPU (`if device == "cpu":`)."""
    for node, _scope in ctx.ifs:
        if not isinstance(node, ast.If) or not node.body:
            continue
        first, last = node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno
        if first <= interval.start_line and interval.end_line <= last and isinstance(
                node.test, ast.Compare) and all(isinstance(op, ast.Eq) for op in node.test.ops) \
                and any(isinstance(c, ast.Constant) and c.value == "cpu"
                        for c in [node.test.left, *node.test.comparators]):
            return True
    return False


def _reads_a_tensor(facts: FunctionFacts, first_line: int, last_line: int,
                    ctx: ModuleContext) -> bool:
    """An `if`, `while` or `assert` of the function after `first_line`, up to `last_line`, reads
    a tensor on the host."""
    from .sync import _test_reads_tensor

    for node, scope in ctx.ifs:
        if ctx.facts_for(scope) is facts and first_line < node.lineno <= last_line \
                and _test_reads_tensor(node.test, ctx, facts):
            return True
    return False


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
