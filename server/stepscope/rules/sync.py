"""SS101 / SS103 (host-device sync inside a step loop) and SS102 (a sync after every operation).

SS101 reports syncs in *training* step loops (a loop that calls backward, an optimizer step or a
training-step helper) and in loops the program profiles; SS103 reports them in evaluation and
inference loops (a loop that only runs a model), where a read per batch is often affordable, and
is off by default. Both report only inside a step loop (see `stepscope.source.loops`), never where
the read does not happen every step (a periodic guard such as `if step % 100 == 0:`, a debug flag,
`if i == 0:`, a block that leaves the loop, an `except` handler), never on values known to be on
the host (NumPy arrays, Python numbers, CPU tensors such as a batch straight from the loader), in
loops of at most ten iterations written in the source, in tests, or in files of another
framework; and once per call chain (`x.cpu().numpy()` is one sync). `torch.cuda.synchronize()`
in a loop that also reads a clock is measurement, not a leak.

A loop without gradients (`torch.no_grad()` / `torch.inference_mode()` around it) trains only
where it calls backward or an optimizer step itself. A call to a helper of the same module that
reads an argument on the host is reported at the call (see `helper_reads`). Where the module
puts no tensor on a device, every message is said of a GPU run ("when this loop runs on a GPU,
...").
"""

from __future__ import annotations

import ast
import bisect
import re
from pathlib import PurePath
from typing import Iterator

from ..source.loops import Loop, is_model_name, iter_statements, terminal_name
from .context import ModuleContext, Scope, _is_host_value, host_here, host_names
from .helper_reads import HelperIndex, reads_for_call
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
_MATH_READS = frozenset({"isnan", "isinf", "isfinite", "floor", "ceil", "exp", "log", "sqrt",
                         "fabs", "isclose"})
_TEST_DIRS = frozenset({"test", "tests", "testing", "unittest", "unittests", "unit_tests"})


def is_test_path(path: str) -> bool:
    """A test file: under a `test`/`tests` folder, `test_*.py`, `*_test.py`, `conftest.py`."""
    parts = PurePath(path.replace("\\", "/")).parts
    name = parts[-1] if parts else ""
    return (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
            or any(part in _TEST_DIRS for part in parts[:-1]))


def _loop_reads_clock(ctx: ModuleContext, loop: Loop) -> bool:
    lines = getattr(ctx, "_clock_lines", None)
    if lines is None:
        lines = sorted(c.lineno for c, _ in ctx.calls if terminal_name(c.func) in _CLOCKS)
        ctx._clock_lines = lines  # type: ignore[attr-defined]
    i = bisect.bisect_left(lines, loop.line)
    return i < len(lines) and lines[i] <= loop.end_line


def _is_sync_method_call(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in _SYNC_METHODS and not node.args)


def _where(loop: Loop, role: str, scope: Scope) -> str:
    if role == "evaluation":
        return f"in every batch of the evaluation or inference loop (line {loop.line})"
    if scope.accumulation:
        return (f"on every optimizer step of the training loop (line {loop.line}), which is "
                f"every batch when gradient accumulation is 1")
    kind = "training" if role == "training" else "profiled"
    return f"in every step of the {kind} loop (line {loop.line})"


_TRAINING_ADVICE = "keep the value on the device, read it after the loop or every N steps"
_EVALUATION_ADVICE = ("accumulate on the device (`correct += (pred == y).sum()`) and read once "
                      "after the loop if the evaluation's speed matters")


def check_ss101(ctx: ModuleContext, path: str) -> Iterator[Diagnostic]:
    """Syncs in every step of a training loop or of a profiled loop."""
    for code, diag in _loop_syncs(ctx, path):
        if code == "SS101":
            yield diag


def check_ss103(ctx: ModuleContext, path: str) -> Iterator[Diagnostic]:
    """Syncs in every batch of an evaluation or inference loop."""
    for code, diag in _loop_syncs(ctx, path):
        if code == "SS103":
            yield diag


def _reportable(ctx: ModuleContext, path: str) -> bool:
    return not (ctx.other_framework or is_test_path(path))


def _step_loop(ctx: ModuleContext, scope: Scope, loop: Loop | None = None) -> Loop | None:
    """The step loop a node runs in every step of; None when it does not run every step of one
    (or the loop is a test, a short warm-up or a check)."""
    if loop is None:
        if scope.infrequent:
            return None
        loop = ctx.repeated_step_loop(scope)
    if loop is None or scope.test:
        return None
    return loop


def _loop_syncs(ctx: ModuleContext, path: str) -> list[tuple[str, Diagnostic]]:
    """What SS101 and SS103 report, found once for both."""
    cached = ctx.__dict__.get("_loop_syncs")
    if cached is None or cached[0] != path:
        cached = ctx.__dict__["_loop_syncs"] = (path, list(_find_loop_syncs(ctx, path)))
    return cached[1]


def _find_loop_syncs(ctx: ModuleContext, path: str) -> Iterator[tuple[str, Diagnostic]]:
    if not _reportable(ctx, path):
        return
    clock_cache: dict[int, bool] = {}
    for call, scope in ctx.calls:
        if scope.step_loop is None or scope.test or scope.infrequent:
            continue
        loop = ctx.repeated_step_loop(scope)
        if loop is None:
            continue
        message = _call_sync(call, scope, loop, ctx, clock_cache)
        if message:
            code, text = _compose(message, loop, ctx.loop_role(loop), scope)
            yield code, make_diagnostic(code, _conditional(text, ctx), path, ctx.span(call))

    for node, scope in ctx.ifs:
        if isinstance(node, ast.While):
            own = ctx.loop_by_pos.get((node.lineno, node.col_offset))
            if own is not None and own.is_step:  # the step loop's own condition: every step
                loop = _step_loop(ctx, Scope(scope.function, (), False, test=scope.test), own)
            else:
                loop = _step_loop(ctx, scope)
        else:
            loop = _step_loop(ctx, scope)
        if loop is None:
            continue
        role = ctx.loop_role(loop)
        facts = ctx.facts_for(scope)
        test = _tensor_part(node.test, ctx, facts)
        if test is None:
            continue
        kind = {ast.IfExp: "a conditional expression", ast.While: "a `while` condition",
                ast.Assert: "an `assert`"}.get(type(node), "an `if`")
        what = f"a tensor in {kind} is read on the host and waits for the device"
        advice = ("compute on the device (torch.where) or check every N steps"
                  if role != "evaluation" else _EVALUATION_ADVICE)
        code = "SS103" if role == "evaluation" else "SS101"
        yield code, make_diagnostic(
            code, _conditional(f"{what} {_where(loop, role, scope)}; {advice}", ctx), path,
            ctx.span(test))


_DEVICE_WORDS = re.compile(r"cuda|\bmps\b|\bxpu\b|accelerator")
# `.to(device)`, `.to(args.dev)`, `.to(local_rank)`, `.to(gpu)`, `device=device`: a device that
# is not written as "cpu" (a rank or a GPU index names a GPU)
_DEVICE_ARGUMENT = re.compile(
    r"\.to\(\s*(?![\"']cpu[\"'])[\w.]*(dev|rank|gpu)|\bdevice\s*=\s*(?![\"']cpu[\"'])[^\s,)=]")


def places_on_a_device(text: str) -> bool:
    """The program puts tensors on an accelerator somewhere (`.cuda()`, `"cuda"`,
    `torch.cuda...`, `.to(device)`, `device=...` not written as "cpu"). Where it does not, its
    tensors stay on the host as written, and a read waits for a device only when someone runs
    the loop on one."""
    return bool(_DEVICE_WORDS.search(text) or _DEVICE_ARGUMENT.search(text))


def _conditional(message: str, ctx: ModuleContext) -> str:
    """`message` as it holds for this program: said of a GPU run where nothing in the file
    puts tensors on a device (the loop then waits for nothing as written)."""
    on_device = ctx.__dict__.get("_places_on_a_device")
    if on_device is None:
        on_device = ctx.__dict__["_places_on_a_device"] = places_on_a_device(ctx.text)
    if on_device:
        return message
    return f"when this loop runs on a GPU, {message}"


def _compose(message: str, loop: Loop, role: str, scope: Scope) -> tuple[str, str]:
    if message.startswith("`torch.") and "synchronize" in message:
        head, _, tail = message.partition(" waits ")
        text = f"{head} {_where(loop, role, scope)} waits {tail}"
    else:
        advice = _EVALUATION_ADVICE if role == "evaluation" else _TRAINING_ADVICE
        text = f"{message} {_where(loop, role, scope)}; {advice}"
    return ("SS103" if role == "evaluation" else "SS101"), text


def _call_sync(call: ast.Call, scope: Scope, loop: Loop, ctx: ModuleContext,
               clock_cache: dict[int, bool]) -> str | None:
    """What a call inside a step loop does that makes the host wait, or None."""
    facts = ctx.facts_for(scope)
    func = call.func
    if _is_sync_method_call(call):
        assert isinstance(func, ast.Attribute)
        receiver = func.value
        if _is_sync_method_call(receiver):
            return None  # `x.cpu().numpy()`: reported once, on `.cpu()`
        if func.attr == "cpu" and isinstance(receiver, (ast.Name, ast.Attribute)) \
                and is_model_name(terminal_name(receiver) or "", ctx.model_names):
            return None  # moving a model, not a tensor
        if func.attr in ("tolist", "numpy", "cpu") and not ctx.is_tensor_expr(receiver, facts) \
                and not _looks_like_tensor_chain(receiver):
            return None  # could be a NumPy array or a list: no device involved
        if host_here(receiver, facts, ctx):
            return None  # already on the host
        return _SYNC_METHODS[func.attr]
    if isinstance(func, ast.Name) and func.id in _CONVERSIONS and len(call.args) == 1:
        arg = call.args[0]
        if ctx.is_tensor_expr(arg, facts) and not host_here(arg, facts, ctx):
            return f"`{func.id}()` of a tensor waits for the device"
        return None
    if isinstance(func, ast.Attribute) and call.args and func.attr in _MATH_READS:
        dotted = ctx.dotted(func) or ""
        if dotted.startswith("math.") and any(_on_device(a, ctx, facts) for a in call.args):
            return (f"`{dotted}()` of a tensor converts it to a Python number and waits for "
                    f"the device")
    if isinstance(func, ast.Name) and func.id == "print":
        if any(_prints_tensor(arg, ctx, facts) for arg in call.args):
            return "printing a tensor copies it to the host and waits for the device"
        return None
    if isinstance(func, ast.Attribute) and func.attr == "synchronize":
        dotted = ctx.dotted(func) or ""
        if dotted.startswith("torch.") and not call.args:
            if loop.line not in clock_cache:
                clock_cache[loop.line] = _loop_reads_clock(ctx, loop)
            if not clock_cache[loop.line]:
                return (f"`{dotted}()` waits for all queued device work and removes CPU/GPU "
                        f"overlap")
        return None
    return _helper_sync(call, loop, ctx, facts)


def _helper_index(ctx: ModuleContext) -> HelperIndex:
    index = ctx.__dict__.get("_helper_index")
    if index is None:
        index = ctx.__dict__["_helper_index"] = HelperIndex(ctx.tree)
    return index


def _helper_sync(call: ast.Call, loop: Loop, ctx: ModuleContext, facts) -> str | None:
    """A call to a helper of this module that reads a device value it is given on the host
    (`log_metrics(loss)` whose body does `float(loss)`), said at the call: the step waits there.
    A helper defined inside the loop is not followed: its own lines are checked as the step's."""
    if not (call.args or call.keywords):
        return None
    index = _helper_index(ctx)
    helper = index.callee(call)
    if helper is None or loop.line <= helper.node.lineno <= loop.end_line:
        return None
    for arg, read in reads_for_call(index, call, helper):
        if _is_sync_method_call(arg) or _is_conversion(arg) or not _on_device(arg, ctx, facts):
            continue
        name = ctx.source_of(call.func)
        value = ctx.source_of(arg)
        what = f"`{value}`" if len(value) <= 30 and "\n" not in value else "its argument"
        inside = "" if read.function == terminal_name(call.func) else f" in `{read.function}`"
        return (f"`{name}` reads {what} on the host with {read.how}{inside} (line {read.line}) "
                f"and waits for the device")
    return None


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


def _on_device(node: ast.expr, ctx: ModuleContext, facts) -> bool:
    return ctx.is_tensor_expr(node, facts) and not host_here(node, facts, ctx)


def _prints_tensor(arg: ast.expr, ctx: ModuleContext, facts) -> bool:
    if isinstance(arg, ast.JoinedStr):
        return any(isinstance(v, ast.FormattedValue) and _on_device(v.value, ctx, facts)
                   and not _is_sync_method_call(v.value) for v in arg.values)
    if isinstance(arg, ast.Name):
        return _on_device(arg, ctx, facts)
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
        return any(_on_device(o, ctx, facts) for o in operands)
    if isinstance(test, ast.Call):
        name = terminal_name(test.func)
        if name in _TENSOR_PREDICATES:
            dotted = ctx.dotted(test.func) or ""
            if dotted.startswith("torch.") and not dotted.startswith("torch.cuda"):
                return not all(_is_host_value(a, host_names(facts, ctx), ctx)
                               for a in test.args) or not test.args
            if isinstance(test.func, ast.Attribute) and _on_device(test.func.value, ctx, facts):
                return True
    return False


def _is_conversion(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in _CONVERSIONS)


def check_ss102(ctx: ModuleContext, path: str, min_syncs: int = 2) -> Iterator[Diagnostic]:
    """Blocks inside a profiled region (or a timed interval) that synchronise after each op.

    Counted: synchronize calls that each follow some work, with no clock reading between them.
    One sync before each clock reading (intervals timed back to back, "sync, start, work, sync,
    stop") is how a duration is measured, not a sync after every operation."""
    seen: set[int] = set()
    for with_node, _call, _scope in ctx.profile_withs:
        for block in _blocks(with_node.body):
            syncs = _splitting_syncs(block, ctx)
            if len(syncs) >= min_syncs and id(syncs[1]) not in seen:
                seen.add(id(syncs[1]))
                yield make_diagnostic(
                    "SS102",
                    f"{len(syncs)} synchronize calls between operations inside the profiled "
                    f"region remove the overlap the trace should show; the profiler records "
                    f"device time without them",
                    path, ctx.span(syncs[1]))
    from .timing import measures_a_rate, timed_intervals  # shared interval finder

    for interval in timed_intervals(ctx):
        if measures_a_rate(interval, ctx):
            continue  # a whole run: its syncs are not the timed work's
        syncs = _syncs_after_work(interval.calls, ctx, min_syncs)
        if len(syncs) >= min_syncs and id(syncs[1]) not in seen:
            seen.add(id(syncs[1]))
            yield make_diagnostic(
                "SS102",
                f"{len(syncs)} synchronize calls after separate operations inside one timed "
                f"interval (from line {interval.start_line}) serialise the work being timed; "
                f"synchronise once before each clock reading",
                path, ctx.span(syncs[1]))


def _splitting_syncs(block: list[ast.stmt], ctx: ModuleContext) -> list[ast.stmt]:
    """Synchronize statements of `block` that each follow some work since the last one, the
    longest such run with no clock reading in it."""
    best: list[ast.stmt] = []
    run: list[ast.stmt] = []
    work = False
    if sum(1 for stmt in block if _is_sync_stmt(stmt, ctx)) < 2:
        return best  # (the clock search below walks every statement: only where it matters)
    for stmt in block:
        if _is_sync_stmt(stmt, ctx):
            if work:
                run.append(stmt)
            work = False
        elif _reads_clock(stmt):
            best, run, work = max(best, run, key=len), [], False
        else:
            work = True
    return max(best, run, key=len)


def _reads_clock(stmt: ast.stmt) -> bool:
    return any(isinstance(n, ast.Call) and _is_clock(n) for n in ast.walk(stmt))


def _syncs_after_work(calls: list[ast.Call], ctx: ModuleContext, min_syncs: int) -> list[ast.Call]:
    """Synchronize calls that each follow some other work, in the longest run with no clock
    reading between them (a sync that opens the interval only waits for earlier work, and a sync
    followed by a clock reading measures: neither splits the timed work)."""
    best: list[ast.Call] = []
    run: list[ast.Call] = []
    pending_work = False
    for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset)):
        if _is_sync_call(call, ctx):
            if pending_work:
                run.append(call)
            pending_work = False
        elif _is_clock(call):
            best, run, pending_work = max(best, run, key=len), [], False
        elif not _is_query(call):
            pending_work = True
    return max(best, run, key=len)


def _is_query(call: ast.Call) -> bool:
    """`is_cuda_available()`, `has_musa()`: a question that picks a branch, not work (so the
    syncs of `if cuda: torch.cuda.synchronize() elif musa: torch.musa.synchronize()` are one)."""
    name = terminal_name(call.func) or ""
    return name.startswith(("is_", "has_")) or name.endswith("_available")


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
