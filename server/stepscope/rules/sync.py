"""SS101 (host-device sync inside the step loop) and SS102 (a sync after every operation).

SS101 reports only inside a step loop (see `stepscope.source.loops`), never under a periodic
guard (`if step % 100 == 0:` logs deliberately), and once per call chain (`x.cpu().numpy()` is one
sync). `torch.cuda.synchronize()` in a loop that also reads a clock is measurement, not a leak.
"""

from __future__ import annotations

import ast
import bisect
from typing import Iterator

from ..source.loops import is_model_name, iter_statements, terminal_name
from .context import ModuleContext, Scope
from .model import Diagnostic, make_diagnostic

_SYNC_METHODS = {
    "item": "`.item()` copies the value to the host and waits for the device",
    "cpu": "`.cpu()` copies to the host and waits for the device",
    "numpy": "`.numpy()` needs the value on the host and waits for the device",
    "tolist": "`.tolist()` copies to the host and waits for the device",
}
_CONVERSIONS = ("float", "int", "bool")
_CLOCKS = frozenset({"time", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns",
                     "time_ns", "default_timer", "Event", "elapsed_time"})
_TENSOR_PREDICATES = frozenset({"isnan", "isinf", "isfinite", "any", "all", "equal", "allclose",
                                "is_nonzero"})


def _loop_reads_clock(ctx: ModuleContext, loop_line: int) -> bool:
    lines = getattr(ctx, "_clock_lines", None)
    if lines is None:
        lines = sorted(c.lineno for c, _ in ctx.calls if terminal_name(c.func) in _CLOCKS)
        ctx._clock_lines = lines  # type: ignore[attr-defined]
    loop = next(lp for lp in ctx.loops if lp.line == loop_line)
    i = bisect.bisect_left(lines, loop.line)
    return i < len(lines) and lines[i] <= loop.end_line


def _is_sync_method_call(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in _SYNC_METHODS and not node.args)


def _where(scope: Scope) -> str:
    loop = scope.step_loop
    return f"inside the step loop (line {loop.line})" if loop else "inside the step loop"


def check_ss101(ctx: ModuleContext, path: str) -> Iterator[Diagnostic]:
    advice = "keep the value on the device, read it after the loop or every N steps"
    clock_cache: dict[int, bool] = {}
    for call, scope in ctx.calls:
        loop = scope.step_loop
        if loop is None or scope.periodic:
            continue
        facts = ctx.facts_for(scope)
        func = call.func
        message = None
        if _is_sync_method_call(call):
            assert isinstance(func, ast.Attribute)
            receiver = func.value
            if _is_sync_method_call(receiver):
                continue  # `x.cpu().numpy()`: reported once, on `.cpu()`
            if func.attr == "cpu" and isinstance(receiver, (ast.Name, ast.Attribute)) \
                    and is_model_name(terminal_name(receiver) or "", ctx.model_names):
                continue  # moving a model, not a tensor
            if func.attr in ("tolist", "numpy", "cpu") and not ctx.is_tensor_expr(receiver, facts) \
                    and not _looks_like_tensor_chain(receiver):
                continue  # could be a NumPy array or a list: no device involved
            message = f"{_SYNC_METHODS[func.attr]} {_where(scope)}; {advice}"
        elif isinstance(func, ast.Name) and func.id in _CONVERSIONS and len(call.args) == 1:
            if ctx.is_tensor_expr(call.args[0], facts):
                message = (f"`{func.id}()` of a tensor waits for the device {_where(scope)}; "
                           f"{advice}")
        elif isinstance(func, ast.Name) and func.id == "print":
            if any(_prints_tensor(arg, ctx, facts) for arg in call.args):
                message = (f"printing a tensor copies it to the host and waits for the device "
                           f"{_where(scope)}; {advice}")
        elif isinstance(func, ast.Attribute) and func.attr == "synchronize":
            dotted = ctx.dotted(func) or ""
            if dotted.startswith("torch.") and not call.args:
                if loop.line not in clock_cache:
                    clock_cache[loop.line] = _loop_reads_clock(ctx, loop.line)
                if not clock_cache[loop.line]:
                    message = (f"`{dotted}()` {_where(scope)} waits for all queued device work "
                               f"every step and removes CPU/GPU overlap")
        if message:
            yield make_diagnostic("SS101", message, path, ctx.span(call))

    for node, scope in ctx.ifs:
        loop = scope.step_loop
        if loop is None or scope.periodic or isinstance(node, ast.While):
            continue
        facts = ctx.facts_for(scope)
        test = _tensor_part(node.test, ctx, facts)
        if test is not None:
            kind = "conditional expression" if isinstance(node, ast.IfExp) else "`if`"
            yield make_diagnostic(
                "SS101",
                f"a tensor in an {kind} {_where(scope)} is read on the host and waits for the "
                f"device; compute on the device (torch.where) or check every N steps",
                path, ctx.span(test))


def _tensor_part(test: ast.expr, ctx: ModuleContext, facts) -> ast.expr | None:
    """The smallest part of an `if` test that reads a tensor on the host, or None."""
    from .context import _is_periodic_test

    if _is_periodic_test(test):
        return None  # `if step % 100 == 0 and ...`: the guard of periodic work
    if isinstance(test, ast.BoolOp):
        return next((p for p in map(lambda v: _tensor_part(v, ctx, facts), test.values) if p),
                    None)
    return test if _test_reads_tensor(test, ctx, facts) else None


def _looks_like_tensor_chain(node: ast.AST) -> bool:
    """`x.detach()`, `out.float()`: a method chain through tensor-only methods."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in {"detach", "float", "half", "double", "long", "int",
                                   "argmax", "softmax", "sigmoid", "squeeze", "flatten"})


def _prints_tensor(arg: ast.expr, ctx: ModuleContext, facts) -> bool:
    if isinstance(arg, ast.JoinedStr):
        return any(isinstance(v, ast.FormattedValue) and ctx.is_tensor_expr(v.value, facts)
                   and not _is_sync_method_call(v.value) for v in arg.values)
    if isinstance(arg, ast.Name):
        return ctx.is_tensor_expr(arg, facts)
    return False


def _test_reads_tensor(test: ast.expr, ctx: ModuleContext, facts) -> bool:
    if isinstance(test, ast.BoolOp):
        return any(_test_reads_tensor(v, ctx, facts) for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _test_reads_tensor(test.operand, ctx, facts)
    if isinstance(test, ast.Compare):
        if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in test.ops):
            return False
        operands = [test.left, *test.comparators]
        if any(_is_sync_method_call(o) or _is_conversion(o) for o in operands):
            return False  # the sync is in the operand and reported there
        return any(ctx.is_tensor_expr(o, facts) for o in operands)
    if isinstance(test, ast.Call):
        name = terminal_name(test.func)
        if name in _TENSOR_PREDICATES:
            dotted = ctx.dotted(test.func) or ""
            if dotted.startswith("torch.") and not dotted.startswith("torch.cuda"):
                return True
            if isinstance(test.func, ast.Attribute) and ctx.is_tensor_expr(test.func.value, facts):
                return True
    return False


def _is_conversion(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in _CONVERSIONS)


def check_ss102(ctx: ModuleContext, path: str, min_syncs: int = 2) -> Iterator[Diagnostic]:
    """Blocks inside a profiled region (or a timed interval) that synchronise after each op."""
    seen: set[int] = set()
    for with_node, _call, _scope in ctx.profile_withs:
        for block in _blocks(with_node.body):
            syncs = [s for s in block if _is_sync_stmt(s, ctx)]
            work = [s for s in block if not _is_sync_stmt(s, ctx)]
            if len(syncs) >= min_syncs and len(work) >= min_syncs and id(syncs[1]) not in seen:
                seen.add(id(syncs[1]))
                yield make_diagnostic(
                    "SS102",
                    f"{len(syncs)} synchronize calls between operations inside the profiled "
                    f"region remove the overlap the trace should show; the profiler records "
                    f"device time without them",
                    path, ctx.span(syncs[1]))
    from .timing import timed_intervals  # shared interval finder

    for interval in timed_intervals(ctx):
        syncs = _syncs_after_work(interval.calls, ctx)
        if len(syncs) >= min_syncs and id(syncs[1]) not in seen:
            seen.add(id(syncs[1]))
            yield make_diagnostic(
                "SS102",
                f"{len(syncs)} synchronize calls after separate operations inside one timed "
                f"interval (from line {interval.start_line}) serialise the work being timed; "
                f"synchronise once before each clock reading",
                path, ctx.span(syncs[1]))


def _syncs_after_work(calls: list[ast.Call], ctx: ModuleContext) -> list[ast.Call]:
    """Synchronize calls that each follow some other work (a sync that opens the interval
    only waits for earlier work, it does not split the timed work)."""
    out: list[ast.Call] = []
    pending_work = False
    for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset)):
        if _is_sync_call(call, ctx):
            if pending_work:
                out.append(call)
            pending_work = False
        elif not _is_clock(call):
            pending_work = True
    return out


def _is_clock(call: ast.Call) -> bool:
    return terminal_name(call.func) in _CLOCKS


def _blocks(stmts: list[ast.stmt]) -> Iterator[list[ast.stmt]]:
    """`stmts` and every statement block nested in it."""
    yield stmts
    for stmt in iter_statements(stmts):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(stmt, name, None)
            if block:
                yield block
        for handler in getattr(stmt, "handlers", ()) or ():
            yield handler.body


def _is_sync_call(call: ast.Call, ctx: ModuleContext) -> bool:
    return (isinstance(call.func, ast.Attribute) and call.func.attr == "synchronize"
            and (ctx.dotted(call.func) or "").startswith("torch."))


def _is_sync_stmt(stmt: ast.stmt, ctx: ModuleContext) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and _is_sync_call(stmt.value, ctx))
