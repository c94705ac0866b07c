"""Rules about how `torch.profiler` is set up: SS401–SS407 and SS502.

Whole-profiler problems are reported on the `with profile(...)` line; option problems on the
keyword argument that causes them. Only calls that resolve to torch's profilers count (a
`profile` from another library is left alone).
"""

from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass
from typing import Iterator

from ..source.loops import is_range_like, terminal_name
from .context import SHORT_LOOP, FunctionFacts, ModuleContext, Scope, guard_kind, runs_once
from .model import Diagnostic, Edit, Fix, make_diagnostic
from .sync import is_test_path

_COSTLY_OPTIONS = {
    "record_shapes": "recording shapes adds overhead and can keep tensors alive",
    "with_stack": "recording Python stacks adds overhead to every op",
    "profile_memory": "tracking memory adds overhead to every allocation",
}
_INCLUSIVE_TIME = re.compile(r"^(cpu|cuda|device|xpu|privateuse1)_time(_total)?$")

#: The one schedule SS402 proposes: its message names it and its quick fix inserts it.
_WAIT, _WARMUP, _ACTIVE = 1, 1, 3
SCHEDULE = f"torch.profiler.schedule(wait={_WAIT}, warmup={_WARMUP}, active={_ACTIVE}, repeat=1)"
SCHEDULE_WORDS = f"wait {_WAIT}, warm-up {_WARMUP}, active {_ACTIVE}"
#: the steps a loop must run before that schedule has recorded anything
SCHEDULE_STEPS = _WAIT + _WARMUP + _ACTIVE


def _keyword(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def _has_star_kwargs(call: ast.Call) -> bool:
    return any(k.arg is None for k in call.keywords)


@dataclass(frozen=True)
class Window:
    """Where a torch profiler records: the body of `with profile(...)` (or of `with prof:` for a
    profiler made earlier), or the lines between `prof.start()` and `prof.stop()`."""

    stmt: ast.stmt  # the `with`, or the assignment `prof = profile(...)`: whole-profiler reports
    call: ast.Call  # the profile(...) call
    scope: Scope
    first: int  # first and last line of the recorded code
    last: int
    loop_col: int  # loops of the window start at this column or right of it
    opener: tuple[int, int]  # (line, col) where code "before the window" goes
    names: frozenset[str]  # names the profiler is bound to


def profiler_windows(ctx: ModuleContext) -> list[Window]:
    cached = ctx.__dict__.get("_profiler_windows")
    if cached is not None:
        return cached
    windows: list[Window] = []
    for with_node, call, scope in ctx.profile_withs:
        names = frozenset(item.optional_vars.id for item in with_node.items
                          if isinstance(item.optional_vars, ast.Name))
        windows.append(Window(with_node, call, scope, with_node.body[0].lineno,
                              with_node.end_lineno or with_node.lineno,
                              with_node.col_offset + 1, (with_node.lineno, with_node.col_offset),
                              names))
    bound = _bound_profilers(ctx)
    if bound:
        windows.extend(_started_windows(ctx, bound))
        windows.extend(_named_with_windows(ctx, bound))
    windows.sort(key=lambda w: (w.first, w.loop_col))
    ctx.__dict__["_profiler_windows"] = windows
    return windows


def _bound_profilers(ctx: ModuleContext) -> dict[tuple[int, str], tuple[ast.Assign, ast.Call, Scope]]:
    """(id of the function, name) -> the assignment `name = torch.profiler.profile(...)`."""
    assigns = [node for node in ctx.assigns
               if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
               and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
               and ctx.is_torch_profile_call(node.value)]
    if not assigns:
        return {}
    calls = {id(c): s for c, s in ctx.calls}
    out = {}
    for node in assigns:
        scope = calls.get(id(node.value))
        if scope is not None:
            out[(id(scope.function), node.targets[0].id)] = (node, node.value, scope)  # type: ignore[attr-defined]
    return out


def _started_windows(ctx: ModuleContext, bound) -> Iterator[Window]:
    """`prof.start()` ... `prof.stop()` (or the end of the function) in the same function."""
    for call, scope in ctx.calls_named("start"):
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr == "start"
                and isinstance(func.value, ast.Name)):
            continue
        key = (id(scope.function), func.value.id)
        if key not in bound:
            continue
        assign, prof_call, _s = bound[key]
        stops = [c.lineno for c, s in ctx.calls_named("stop") if s.function is scope.function
                 and isinstance(c.func, ast.Attribute) and c.func.attr == "stop"
                 and isinstance(c.func.value, ast.Name) and c.func.value.id == func.value.id
                 and c.lineno > call.lineno]
        end = getattr(scope.function, "end_lineno", None) or len(ctx.lines)
        yield Window(assign, prof_call, scope, call.lineno + 1,
                     (min(stops) - 1) if stops else end, call.col_offset,
                     (call.lineno, call.col_offset), frozenset({func.value.id}))


def _named_with_windows(ctx: ModuleContext, bound) -> Iterator[Window]:
    """`prof = profile(...)` then `with prof:`."""
    for with_node, scope in ctx.named_withs:
        for item in with_node.items:
            expr = item.context_expr
            if isinstance(expr, ast.Name) and (id(scope.function), expr.id) in bound:
                assign, prof_call, _s = bound[(id(scope.function), expr.id)]
                names = {expr.id}
                if isinstance(item.optional_vars, ast.Name):
                    names.add(item.optional_vars.id)  # `with torch_profiler as p:`
                yield Window(with_node, prof_call, scope, with_node.body[0].lineno,
                             with_node.end_lineno or with_node.lineno, with_node.col_offset + 1,
                             (with_node.lineno, with_node.col_offset), frozenset(names))


_WHAT_IT_RECORDS = {"record_shapes": "the shapes", "with_stack": "the stacks",
                    "profile_memory": "the memory figures"}
_ALL = frozenset(_COSTLY_OPTIONS)


def check_ss401(ctx: ModuleContext, path: str) -> Iterator[Diagnostic]:
    """A costly option that is on while its data goes unused, or while the profiled region is
    timed with a wall clock (then the duration includes the profiler's own cost)."""
    for call, scope in ctx.calls:
        if not ctx.is_torch_profile_call(call):
            continue
        costly = [kw for kw in call.keywords if kw.arg in _COSTLY_OPTIONS
                  and isinstance(kw.value, ast.Constant) and kw.value.value is True]
        if not costly:
            continue
        timed = _timed_while_profiling(call, scope, ctx)
        used = _ALL if timed else _data_used(call, scope, ctx)
        for kw in costly:
            if timed:
                message = (f"`{kw.arg}=True` while this profiled region is timed with a wall "
                           f"clock (line {timed}): {_COSTLY_OPTIONS[kw.arg]}, so the duration "
                           f"includes the profiler's cost; time the region without the profiler "
                           f"or turn the option off")
            elif kw.arg in used:
                continue
            else:
                message = (f"`{kw.arg}=True`, but nothing here reads {_WHAT_IT_RECORDS[kw.arg]} "
                           f"it records (no trace export or handler, no table or query that "
                           f"shows them): {_COSTLY_OPTIONS[kw.arg]}; turn it off")
            line, col, end_line, end_col = ctx.span(kw.value)
            fix = Fix(f"Turn {kw.arg} off", (Edit(line, col, end_line, end_col, "False"),))
            yield make_diagnostic("SS401", message, path, ctx.span(kw), fixes=(fix,))


def _profiler_binding(call: ast.Call, ctx: ModuleContext) -> tuple[str | None, ast.AST | None]:
    """The name the profiler is bound to and the `with` statement that holds it, if any."""
    for with_node, with_call, _scope in ctx.profile_withs:
        if with_call is call:
            for item in with_node.items:
                if item.context_expr is call:
                    name = item.optional_vars.id if isinstance(item.optional_vars, ast.Name) \
                        else None
                    return name, with_node
    for node in ctx.assigns:
        if isinstance(node, ast.Assign) and node.value is call and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            return node.targets[0].id, None
    return None, None


def _timed_while_profiling(call: ast.Call, scope, ctx: ModuleContext) -> int | None:
    """The line of a wall-clock duration that overlaps the `with profile(...)` block."""
    from .timing import timed_intervals

    _name, with_node = _profiler_binding(call, ctx)
    if with_node is None:
        return None
    first, last = with_node.lineno, with_node.end_lineno or with_node.lineno
    for interval in timed_intervals(ctx):
        if interval.function.node is not scope.function:
            continue
        if interval.start_line <= last and first <= interval.end_line:
            return interval.duration.lineno
    return None


def _data_used(call: ast.Call, scope, ctx: ModuleContext) -> frozenset[str]:
    """Which options' data the code reads: all of them when a trace is exported or handed to a
    handler, or when the profiler leaves the function (returned, passed on, stored)."""
    if _keyword(call, "on_trace_ready") is not None or _has_star_kwargs(call):
        return _ALL
    name, _with_node = _profiler_binding(call, ctx)
    if name is None:
        return _ALL  # returned, passed to a function, kept in an attribute: used elsewhere
    used: set[str] = set()
    function = scope.function
    parents: dict[int, ast.AST] = {}
    for parent in ast.walk(function):
        for child in ast.iter_child_nodes(parent):
            parents[id(child)] = parent
    for node in ast.walk(function):
        if not (isinstance(node, ast.Name) and node.id == name
                and isinstance(node.ctx, ast.Load)):
            continue
        parent = parents.get(id(node))
        if not isinstance(parent, ast.Attribute):
            if isinstance(parent, ast.withitem) or (
                    isinstance(parent, ast.Compare)):
                continue
            return _ALL  # handed to a call, returned, stored: read somewhere else
        use = _use_of(parent, parents)
        if use is None:
            continue
        used |= use
        if used >= _ALL:
            break
    return frozenset(used)


def _use_of(attr: ast.Attribute, parents: dict[int, ast.AST]) -> set[str] | None:
    """What reading `prof.<attr>...` uses of the recorded data."""
    if attr.attr in ("step", "start", "stop", "__enter__", "__exit__", "enabled"):
        return None
    if attr.attr in _EXPORTS or attr.attr.startswith("export") or attr.attr in (
            "events", "function_events", "profiler", "_memory_profile", "memory_timeline"):
        return set(_ALL)
    used: set[str] = set()
    node: ast.AST = attr
    for _ in range(6):  # prof.key_averages(group_by_input_shape=True).table(sort_by=...)
        parent = parents.get(id(node))
        if isinstance(parent, ast.Call) and parent.func is node:
            for kw in parent.keywords:
                if kw.arg == "group_by_input_shape":
                    used.add("record_shapes")
                elif kw.arg == "group_by_stack_n":
                    used.add("with_stack")
                elif isinstance(kw.value, ast.Constant) and "memory" in str(kw.value.value):
                    used.add("profile_memory")
            if isinstance(node, ast.Attribute) and node.attr == "table":
                used.add("profile_memory")  # the table shows memory columns when recorded
                return used  # what comes out is text: printed or written, nothing more read
            node = parent
        elif isinstance(parent, ast.Attribute):
            if parent.attr in ("table", "key_averages"):
                node = parent
                continue
            return set(_ALL)  # e.g. `.input_shapes`, `.stack` read from the rows
        elif isinstance(parent, (ast.For, ast.comprehension, ast.ListComp, ast.GeneratorExp,
                                 ast.Subscript)) or (isinstance(parent, ast.Call)
                                                     and node in parent.args):
            return set(_ALL)  # rows iterated or handed on: their fields may be read
        else:
            break
    return used


def _body_has_step_loop(window: Window, ctx: ModuleContext) -> bool:
    """A training/inference step loop runs inside (a kernel micro-benchmark loop does not count:
    its authors warm up by hand and read kernel durations, which the profiler's start-up does not
    distort)."""
    return bool(_step_loops_in(window, ctx))


def _step_loops_in(window: Window, ctx: ModuleContext) -> list:
    lines = ctx.__dict__.get("_loop_lines")
    if lines is None:
        lines = ctx.__dict__["_loop_lines"] = [lp.line for lp in ctx.loops]  # sorted by line
    lo = bisect.bisect_left(lines, window.first)
    hi = bisect.bisect_right(lines, window.last)
    return [lp for lp in ctx.loops[lo:hi] if lp.col >= window.loop_col and ctx.runs_steps(lp)]


_NOT_WORK = frozenset({"backward", "step", "zero_grad", "synchronize", "range", "enumerate",
                       "len", "print", "append", "item"})


def _warmed_up_by_hand(window: Window, ctx: ModuleContext) -> bool:
    """Before the window, a loop of the same function runs what the profiled loop runs: the
    warm-up is done by hand (a benchmark reading kernel times), not left to a schedule."""
    inside = {terminal_name(c.func) for lp in _step_loops_in(window, ctx)
              for c, _s in ctx.calls_between(lp.line, lp.end_line)} - _NOT_WORK - {None}
    if not inside:
        return False
    function = window.scope.function
    low = getattr(function, "lineno", 0)
    start = window.opener[0]
    for lp in ctx.loops:
        if low <= lp.line < start and lp.end_line < start \
                and ctx.loop_node(lp) is not None and _same_function(lp, function, ctx):
            before = {terminal_name(c.func) for c, _s in ctx.calls_between(lp.line, lp.end_line)}
            if before & inside:
                return True
    return False


def _same_function(loop, function, ctx: ModuleContext) -> bool:
    for call, scope in ctx.calls_between(loop.line, loop.end_line):
        return scope.function is function
    return False


def check_ss402(ctx: ModuleContext, path: str) -> Iterator[Diagnostic]:
    for window in profiler_windows(ctx):
        call = window.call
        if ctx.is_torch_profile_call(call) != "torch.profiler":
            continue
        if _keyword(call, "schedule") or _has_star_kwargs(call) or len(call.args) >= 2:
            continue
        if not _body_has_step_loop(window, ctx) or _warmed_up_by_hand(window, ctx):
            continue
        yield make_diagnostic(
            "SS402",
            "profile() around a loop with no schedule records every iteration, start-up "
            f"included; pass schedule={SCHEDULE} and call prof.step() after each step",
            path, ctx.header_span(window.stmt, call))


def _kernel_timing_schedules(ctx: ModuleContext) -> set[int]:
    """Schedule calls given (directly, or through a name set in the same function) to a profiler
    that records device activity only: such code reads kernel durations, which the profiler's
    start-up does not change (kernel micro-benchmarks warm up by hand)."""
    found: set[int] = set()
    for call, scope in ctx.calls_named("profile"):
        activities, sched = _keyword(call, "activities"), _keyword(call, "schedule")
        if activities is None or sched is None \
                or not isinstance(activities.value, (ast.List, ast.Tuple)):
            continue
        kinds = {terminal_name(e) for e in activities.value.elts}
        if not kinds or None in kinds or "CPU" in kinds:
            continue
        if isinstance(sched.value, ast.Call):
            found.add(id(sched.value))
        elif isinstance(sched.value, ast.Name):
            for node in ctx.facts_for(scope).assigns:
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and any(
                        isinstance(t, ast.Name) and t.id == sched.value.id
                        for t in node.targets):
                    found.add(id(node.value))
    return found


def check_ss403(ctx: ModuleContext, path: str) -> Iterator[Diagnostic]:
    kernel_timing: set[int] | None = None
    imports = ctx.imports
    for call, _scope in ctx.calls:
        func = call.func  # the last name must be `schedule`: most calls are ruled out by it alone
        if not (func.attr == "schedule" if type(func) is ast.Attribute else type(func) is ast.Name
                and imports.get(func.id, func.id).endswith("schedule")):  # type: ignore[attr-defined]
            continue
        dotted = ctx.dotted(func) or ""
        if not (dotted.endswith("profiler.schedule") or dotted == "torch.profiler.schedule"):
            continue
        if kernel_timing is None:
            kernel_timing = _kernel_timing_schedules(ctx)
        if id(call) in kernel_timing:
            continue
        kw = _keyword(call, "warmup")
        if kw and isinstance(kw.value, ast.Constant) and kw.value.value == 0 \
                and not isinstance(kw.value.value, bool):
            line, col, end_line, end_col = ctx.span(kw.value)
            fix = Fix("Add one warm-up step", (Edit(line, col, end_line, end_col, "1"),))
            yield make_diagnostic(
                "SS403",
                "`warmup=0`: the first recorded step also pays the profiler's own start-up; "
                "use at least one warm-up step",
                path, ctx.span(kw), fixes=(fix,))


def check_ss404(ctx: ModuleContext, path: str) -> Iterator[Diagnostic]:
    for window in profiler_windows(ctx):
        call = window.call
        if ctx.is_torch_profile_call(call) != "torch.profiler" or not _keyword(call, "schedule"):
            continue
        if not _body_has_step_loop(window, ctx) or _steps_profiler(window, ctx):
            continue
        yield make_diagnostic(
            "SS404",
            "this profiler has a schedule but nothing in its loop calls prof.step(), so the "
            "schedule never advances and no step is recorded; call prof.step() at the end of "
            "each step",
            path, ctx.header_span(window.stmt, call))


def _steps_profiler(window: Window, ctx: ModuleContext) -> bool:
    names = window.names
    for node, _scope in ctx.calls_between(window.first, window.last):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "step":
            receiver = terminal_name(func.value) or ""
            if receiver in names or "prof" in receiver.lower():
                return True
        # The profiler handed to a function or callback may be stepped there.
        if any(isinstance(a, ast.Name) and a.id in names for a in node.args) or any(
                isinstance(k.value, ast.Name) and k.value.id in names for k in node.keywords):
            return True
    return False


_EXPORTS = frozenset({"export_chrome_trace", "export_stacks", "export_memory_timeline"})


def _constant_path(node: ast.AST, ctx: ModuleContext, assigned: dict[str, list[ast.expr]]) -> bool:
    """True when `node` is a path fixed in the source: a literal, or a name set only to one, or
    one joined from those (`os.path.join("out", "trace.json")`, `Path(OUT) / "t.json"`,
    `f"{OUT}/trace.json"`, `"out/" + "trace.json"`)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return True
    if isinstance(node, ast.JoinedStr):
        return all(isinstance(v, ast.Constant) or (
            isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name)
            and _constant_path(v.value, ctx, assigned)) for v in node.values)
    if isinstance(node, ast.Call) and terminal_name(node.func) in ("str", "Path", "PurePath",
                                                                   "fspath") and len(node.args) == 1:
        return _constant_path(node.args[0], ctx, assigned)
    if isinstance(node, ast.Call) and terminal_name(node.func) in ("join", "joinpath") \
            and not node.keywords and node.args and (
                terminal_name(node.func) == "joinpath" or _is_os_path(node.func)):
        receiver_fixed = terminal_name(node.func) == "join" or _constant_path(
            node.func.value, ctx, assigned)  # type: ignore[attr-defined]
        return receiver_fixed and all(_constant_path(a, ctx, assigned) for a in node.args)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.Add)):
        return _constant_path(node.left, ctx, assigned) and _constant_path(node.right, ctx, assigned)
    if isinstance(node, ast.Name):
        values = assigned.get(node.id, [])
        return bool(values) and all(_constant_path(v, ctx, {}) for v in values)
    return False


def _is_os_path(func: ast.expr) -> bool:
    """`os.path.join` / `path.join` / `osp.join` (not `",".join`)."""
    return isinstance(func, ast.Attribute) and isinstance(func.value, (ast.Name, ast.Attribute)) \
        and (terminal_name(func.value) or "") in ("path", "osp", "op")


def check_ss405(ctx: ModuleContext, path: str) -> Iterator[Diagnostic]:
    exports = [(c, s) for c, s in ctx.calls
               if isinstance(c.func, ast.Attribute) and c.func.attr in _EXPORTS and c.args]
    if not exports:
        return
    checked = existence_checked_words(ctx.text)
    assigned = ctx.assigned_values()
    for call, scope in exports:
        target = call.args[0]
        if checked and _path_words(target, ctx, assigned) & checked:
            continue  # this path is tested for an existing file before it is written
        repeated = _repeating_loop(call, scope, ctx)
        if repeated is not None and _same_on_every_pass(target, repeated[0], ctx):
            loop, how_often = repeated
            yield make_diagnostic(
                "SS405",
                f"the trace is exported to the same path {how_often} of the loop at line "
                f"{loop.lineno}: each export overwrites the one before, so only the last trace is "
                f"kept (and every export costs time in the loop); put the step in the name, or "
                f"export once after the loop",
                path, ctx.span(target))
            continue
        if not _constant_path(target, ctx, assigned):
            continue
        fix = None
        if isinstance(target, ast.Constant) and isinstance(target.value, str):
            fix = _unique_name_fix(target, ctx)
        fixes = (fix,) if fix else ()
        yield make_diagnostic(
            "SS405",
            "the trace is written to a fixed path: a second run overwrites the earlier trace "
            "without a word; put a run id or time in the name, or refuse when it exists",
            path, ctx.span(target), fixes=fixes)


def _repeating_loop(call: ast.Call, scope: Scope, ctx: ModuleContext
                    ) -> tuple[ast.For | ast.AsyncFor | ast.While, str] | None:
    """The innermost loop around `call` (in its function) when the call runs on more than one of
    its passes, with how often in words: "on every pass", or "every few passes" under a periodic
    guard (`if step % 100 == 0:`). None when a guard or a `break` keeps it to one pass (`if i == 0:`,
    an `except` handler, a block that leaves the loop)."""
    if not scope.loops:
        return None
    loop = ctx.loop_node(scope.loops[-1])
    if loop is None or _one_pass(loop):
        return None
    how_often = "on every pass"
    block: list[ast.stmt] = loop.body
    while True:
        if runs_once(block):
            return None
        holder = next((stmt for stmt in block if _holds(stmt, call)), None)
        if holder is None:
            return None
        if not isinstance(holder, (ast.If, ast.Try, ast.With, ast.AsyncWith)):
            return loop, how_often  # the call is in this statement itself
        if isinstance(holder, ast.If):
            if _holds_any(holder.body, call):
                kind = guard_kind(holder.test, holder.body)
                block = holder.body
            else:
                kind = "rare" if runs_once(holder.orelse) else None
                block = holder.orelse
            if kind == "rare":
                return None
            if kind == "periodic":
                how_often = "every few passes"
        elif isinstance(holder, ast.Try):
            if any(_holds_any(h.body, call) for h in holder.handlers):
                return None  # runs when something failed
            block = next(b for b in (holder.body, holder.orelse, holder.finalbody)
                         if _holds_any(b, call))
        else:
            if not _holds_any(holder.body, call):
                return loop, how_often  # in the `with` items
            block = holder.body


def _one_pass(loop: ast.stmt) -> bool:
    """`for _ in range(1):`, `for cfg in [only_one]:` — the loop runs its body once."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    it = loop.iter
    if isinstance(it, (ast.List, ast.Tuple)):
        return len(it.elts) <= 1 and not any(isinstance(e, ast.Starred) for e in it.elts)
    return isinstance(it, ast.Call) and terminal_name(it.func) == "range" and len(it.args) == 1 \
        and isinstance(it.args[0], ast.Constant) and it.args[0].value in (0, 1)


def _holds(stmt: ast.stmt, node: ast.AST) -> bool:
    first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
    if not first <= node.lineno <= last:  # type: ignore[attr-defined]
        return False
    return any(sub is node for sub in ast.walk(stmt))


def _holds_any(block: list[ast.stmt], node: ast.AST) -> bool:
    return any(_holds(stmt, node) for stmt in block)


_FIXED_PATH_CALLS = frozenset({"str", "Path", "PurePath", "fspath", "join", "joinpath", "format",
                               "abspath", "realpath", "expanduser", "resolve"})


def _same_on_every_pass(target: ast.expr, loop: ast.stmt, ctx: ModuleContext) -> bool:
    """The path is the same on every pass of `loop`: built only from names the loop does not bind
    (its target included) and calls that only join or convert paths (no clock, counter or id)."""
    first, last = loop.lineno, loop.end_lineno or loop.lineno
    bound = {name for line, name in ctx.stores if first <= line <= last}
    for node in ast.walk(target):
        if isinstance(node, ast.Name) and node.id in bound:
            return False
        if isinstance(node, ast.Call) and terminal_name(node.func) not in _FIXED_PATH_CALLS:
            return False
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == "self" and f"self.{node.attr}" in _assigned_attributes(loop):
            return False
    return True


def _assigned_attributes(loop: ast.stmt) -> set[str]:
    """`self.x` attributes assigned inside `loop` (`self.step += 1`)."""
    out = set()
    for node in ast.walk(loop):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for t in targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                out.add(f"self.{t.attr}")
    return out


def _path_words(target: ast.AST, ctx: ModuleContext, assigned: dict[str, list[ast.expr]]
                ) -> set[str]:
    """The names and string literals a path is built from (and those of the values its names
    are set to), leaving out modules and helpers (`os`, `Path`, `str`)."""
    words: set[str] = set()
    stack = [target]
    seen: set[str] = set()
    while stack:
        node = stack.pop()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value:
                words.add(sub.value)
            elif isinstance(sub, ast.Name) and sub.id not in ctx.imports \
                    and sub.id not in _PATH_HELPERS:
                words.add(sub.id)
                if sub.id not in seen:
                    seen.add(sub.id)
                    stack.extend(assigned.get(sub.id, []))
    return words


_PATH_HELPERS = frozenset({"os", "Path", "PurePath", "str", "osp", "pathlib", "fspath", "path"})
_EXISTS_CALL = re.compile(r"\b(exists|is_file|isfile|lexists)\s*\(")
_EXISTS_WORD = re.compile(r"(?:exists|is_?file)\s*\(")  # literal start: a fast scan
_OPEN_EXCLUSIVE = re.compile(r"open\([^)]*['\"]x['\"]")
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STRINGS = re.compile(r"""(?:'([^'\n]*)'|"([^"\n]*)")""")


def checks_existing_file(text: str) -> bool:
    """The source tests for an existing file (or opens with "x") somewhere.

    Same answer as searching `_EXISTS_CALL`, found faster: candidates come from a scan with a
    literal start, then the word boundary is checked where each one is."""
    for match in _EXISTS_WORD.finditer(text):
        at = match.start()
        if _EXISTS_CALL.match(text, at) or (at > 0 and _EXISTS_CALL.match(text, at - 1)):
            return True
    return "open(" in text and bool(_OPEN_EXCLUSIVE.search(text))


def existence_checked_words(text: str) -> frozenset[str]:
    """Names and string literals on the lines that test for an existing file (`exists()`,
    `is_file()`, `os.path.isfile(...)`, `open(..., "x")`): a path built from one of them is
    checked before it is written. Read from the text, so that a check in any function counts."""
    if not checks_existing_file(text):
        return frozenset()
    words: set[str] = set()
    matches = [*_EXISTS_CALL.finditer(text)]
    if "open(" in text:
        matches.extend(_OPEN_EXCLUSIVE.finditer(text))
    for match in matches:  # the whole line of each check
        start = max(text.rfind("\n", 0, match.start()), text.rfind("\r", 0, match.start())) + 1
        ends = [i for i in (text.find("\n", match.end()), text.find("\r", match.end())) if i >= 0]
        line = text[start:min(ends) if ends else len(text)]
        words.update(_WORDS.findall(line))
        words.update(a or b for a, b in _STRINGS.findall(line))
    return frozenset(words)


def checks_supported_activities(text: str) -> bool:
    return "supported_activities(" in text


# A device chosen at run time with a CPU fallback: `"cuda" if torch.cuda.is_available() else
# "cpu"` (any test, over several lines, `torch.device(...)` around the names or not), an `else:`
# that sets a name to "cpu", a helper that ends in `return "cpu"`, a name set to "cpu" and then to
# "cuda" or "mps" (`device = "cpu"` / `if ...: device = "cuda"`), or a `--device` option that
# offers "cpu".
_CPU_STRING = r"""(?:torch\.device\(\s*)?["']cpu["']"""
_ACCELERATOR_STRING = r"""(?:torch\.device\(\s*)?["'](?:cuda|mps|xpu)[^"'\n]*["']"""
_CPU_FALLBACK = re.compile(
    _ACCELERATOR_STRING + r"""\s*\)?\s+if\s+[^:;]{1,200}?\s+else\s+""" + _CPU_STRING
    + "|" + _CPU_STRING + r"""\s*\)?\s+if\s+[^:;]{1,200}?\s+else\s+""" + _ACCELERATOR_STRING
    + r"""|is_available\(\)\s+else\s+""" + _CPU_STRING
    + r"""|^[ \t]*else\s*:\s*(?:\n[ \t]*)?[\w.]+\s*=\s*""" + _CPU_STRING
    + r"""|add_argument\(\s*["']--device["'][^()]*?["']cpu["']""",
    re.MULTILINE)
_RETURNS_CPU = re.compile(r"""^[ \t]*return\s+""" + _CPU_STRING + r"""\s*\)?[ \t]*(?:#.*)?$""", re.MULTILINE)
_SETS_CPU = re.compile(r"""^[ \t]*([\w.]+)\s*=\s*""" + _CPU_STRING + r"""\s*\)?[ \t]*(?:#.*)?$""", re.MULTILINE)


def _cpu_fallback(text: str) -> bool:
    if _CPU_FALLBACK.search(text):
        return True
    if "is_available()" in text and _RETURNS_CPU.search(text):
        return True
    return any(re.search(rf"""^[ \t]*{re.escape(name)}\s*=\s*{_ACCELERATOR_STRING}""", text, re.MULTILINE)
               for name in set(_SETS_CPU.findall(text)))


# A program that stops without CUDA: it cannot be run where GPU collection is missing unnoticed.
_NEEDS_CUDA = re.compile(
    r"""^[ \t]*assert\s+torch\.cuda\.is_available\(\)"""
    r"""|^[ \t]*if\s+not\s+torch\.cuda\.is_available\(\)\s*:\s*(?:\n[ \t]*)?(?:raise|sys\.exit|exit|return)\b""",
    re.MULTILINE)


def chooses_device(text: str) -> bool:
    """The program is meant to run without CUDA too: it picks its device at run time with a CPU
    fallback, and nothing stops it when CUDA is missing. A CUDA-only program fails loudly before
    a CPU-only trace could pass for a GPU one, so only these programs are worth the warning."""
    return _NEEDS_CUDA.search(text) is None and _cpu_fallback(text)


def _unique_name_fix(target: ast.Constant, ctx: ModuleContext) -> Fix | None:
    value: str = target.value  # type: ignore[assignment]
    if any(ch in value for ch in "\"'{}\\\n"):
        return None  # keep the fix to names that need no escaping
    folder, slash, name = value.rpartition("/")
    stem, dot, ext = name.partition(".")
    # the time and the process id: unique per run, even for two runs started in the same second
    stamp = "{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    new_name = f"{stem}-{stamp}{dot}{ext}"
    new_text = f'f"{folder}{slash}{new_name}"'
    line, col, end_line, end_col = ctx.span(target)
    edits = [Edit(line, col, end_line, end_col, new_text)]
    missing = [m for m in ("os", "time") if not _imports(ctx.tree, m)]
    if missing:
        at = _first_code_line(ctx)
        edits.insert(0, Edit(at, 0, at, 0, "".join(f"import {m}\n" for m in missing)))
    return Fix("Add the time and the process id to the trace name", tuple(edits))


def _imports(tree: ast.Module, module: str) -> bool:
    return any(isinstance(n, ast.Import) and any(a.name == module and a.asname is None
                                                 for a in n.names) for n in tree.body)


def _first_code_line(ctx: ModuleContext) -> int:
    """The line where a new top-level import can go: after the docstring and `__future__`."""
    body = ctx.tree.body
    line = 1
    for stmt in body:
        if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str) and stmt is body[0]) or (
                isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"):
            line = (stmt.end_lineno or stmt.lineno) + 1
            continue
        break
    return line


def check_ss406(ctx: ModuleContext, path: str) -> Iterator[Diagnostic]:
    """CUDA activities asked for unconditionally by a program with a CPU fallback (see
    `chooses_device`) that never checks `supported_activities()`; or CPU activities only in a
    program that moves its work to CUDA. Tests are left alone: they profile what they test."""
    if is_test_path(path):
        return
    checks_support = checks_supported_activities(ctx.text)
    may_run_on_cpu = chooses_device(ctx.text)
    for call, _scope in ctx.calls:
        if ctx.is_torch_profile_call(call) != "torch.profiler":
            continue
        kw = _keyword(call, "activities")
        kinds = _activity_kinds(kw.value, ctx.facts_for(_scope)) if kw is not None else None
        if not kinds:
            continue
        if "CUDA" in kinds and not checks_support and may_run_on_cpu:
            yield make_diagnostic(
                "SS406",
                "CUDA activities requested whatever the device, in a program that falls back to "
                "the CPU, without checking supported_activities(): a run without GPU collection "
                "gives a trace with no GPU events and no error; ask for CUDA only when the device "
                "is CUDA and supported_activities() has it",
                path, ctx.span(kw))
        elif kinds and kinds <= {"CPU"} and _moves_to_cuda(ctx):
            yield make_diagnostic(
                "SS406",
                "this program runs on a CUDA device but the profiler records CPU activities "
                "only: the GPU work is missing from the trace; add ProfilerActivity.CUDA when "
                "supported_activities() has it",
                path, ctx.span(kw))


def _activity_kinds(value: ast.expr, facts: FunctionFacts) -> set[str | None] | None:
    """The activity names of a literal list, or of a name the same function only ever sets to
    literal lists and never adds to (`activities.append(...)` makes it unknown)."""
    if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
        return {terminal_name(e) for e in value.elts}
    if not isinstance(value, ast.Name):
        return None
    values = []
    for node in facts.assigns:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(t, ast.Name) and t.id == value.id for t in targets):
            if not isinstance(node, ast.Assign):
                return None  # `activities += [...]`
            values.append(node.value)
    if any(isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name)
           and c.func.value.id == value.id for c in facts.calls):
        return None  # `activities.append(ProfilerActivity.CUDA)`
    if values and all(isinstance(v, (ast.List, ast.Tuple, ast.Set)) for v in values):
        return {terminal_name(e) for v in values for e in v.elts}  # type: ignore[attr-defined]
    return None


def _moves_to_cuda(ctx: ModuleContext) -> bool:
    """Some call anywhere in the module moves something to a CUDA device."""
    if ctx.summary is not None:
        return ctx.mentions_cuda and ctx.summary.moves_to_cuda
    cached = getattr(ctx, "_moves_to_cuda", None)
    if cached is None:
        cached = ctx._moves_to_cuda = ctx.mentions_cuda and any(  # type: ignore[attr-defined]
            is_cuda_move(call, ctx) for call, _scope in ctx.calls)
    return cached


def is_cuda_move(call: ast.Call, ctx: ModuleContext) -> bool:
    """`x.cuda()`, `.to("cuda")`, `device="cuda:0"`."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "cuda" and not (
            (ctx.dotted(func) or "").startswith("torch.")):
        return True
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) \
                and re.fullmatch(r"cuda(:\d+)?", arg.value):
            if terminal_name(func) in ("to", "device") or any(
                    k.arg == "device" and k.value is arg for k in call.keywords):
                return True
    return False


def assignment_traits(value: ast.expr) -> tuple:
    """All that the rules read from a value in `ctx.assigned_values()`: is it a fixed path (and
    the names and strings it is built from), a comprehension over kernel rows, an iterator made
    with iter()/cycle()/islice(), and the int it is when a loop bound could read it as small."""
    fixed = _constant_path(value, None, {})  # type: ignore[arg-type]
    words = tuple(sorted({n.id if isinstance(n, ast.Name) else str(n.value)
                          for n in ast.walk(value) if isinstance(n, ast.Name)
                          or (isinstance(n, ast.Constant) and isinstance(n.value, str))}
                         )) if fixed else ()
    small = value.value if isinstance(value, ast.Constant) and isinstance(value.value, int) \
        and not isinstance(value.value, bool) and value.value <= SHORT_LOOP else None
    return (fixed, words,
            isinstance(value, (ast.ListComp, ast.GeneratorExp)) and _filters_device_type(value),
            isinstance(value, ast.Call) and terminal_name(value.func) in _ITERATOR_FACTORIES,
            small)


def check_ss407(ctx: ModuleContext, path: str) -> Iterator[Diagnostic]:
    message = ("summing `{attr}` over profiler rows double counts nested and concurrent events; "
               "report elapsed time per step (the step's span) instead")
    for call, _scope in ctx.calls_named("sum"):
        if not (isinstance(call.func, ast.Name) and call.func.id == "sum" and call.args):
            continue
        arg = call.args[0]
        if isinstance(arg, (ast.GeneratorExp, ast.ListComp)):
            attr = _inclusive_attr(arg.elt)
            if attr and not _only_device_rows(arg, ctx) and not any(
                    _one_name(cond) for gen in arg.generators for cond in gen.ifs):
                yield make_diagnostic("SS407", message.format(attr=attr), path, ctx.span(call))
    for node in ctx.loop_nodes:
        if isinstance(node, (ast.For, ast.AsyncFor)) and _iterates_profiler_rows(node.iter):
            for stmt in _sums_in(node.body, guarded=False):
                attr = _inclusive_attr(stmt.value)
                if attr:
                    yield make_diagnostic("SS407", message.format(attr=attr), path,
                                          ctx.span(stmt))


def _one_name(test: ast.expr) -> bool:
    """`e.key == name`, `evt.name == "aten::mm"`: rows of one event name, which do not nest in
    one another (the total time of one annotation or operator)."""
    for node in ast.walk(test):
        if isinstance(node, ast.Compare) and all(isinstance(op, ast.Eq) for op in node.ops) \
                and any(isinstance(x, ast.Attribute) and x.attr in ("key", "name")
                        for x in [node.left, *node.comparators]):
            return True
    return False


def _keeps_device_rows(test: ast.expr) -> bool:
    """`if evt.device_type == DeviceType.CUDA and ...:` keeps kernel rows, which do not nest."""
    return any(isinstance(n, ast.Compare) and all(isinstance(op, ast.Eq) for op in n.ops)
               and any(isinstance(x, ast.Attribute) and x.attr == "device_type"
                       for x in [n.left, *n.comparators])
               for n in ast.walk(test))


def _sums_in(stmts: list[ast.stmt], guarded: bool) -> Iterator[ast.AugAssign]:
    """`total += row.cpu_time_total` statements of a loop body, not under a test that keeps one
    event name (see `_one_name`) or kernel rows only, nor in nested functions."""
    for stmt in stmts:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add) and not guarded:
            yield stmt
        elif isinstance(stmt, ast.If):
            yield from _sums_in(stmt.body, guarded or _one_name(stmt.test)
                                or _keeps_device_rows(stmt.test))
            yield from _sums_in(stmt.orelse, guarded)
        else:
            for name in ("body", "orelse", "finalbody"):
                yield from _sums_in(getattr(stmt, name, None) or [], guarded)
            for handler in getattr(stmt, "handlers", ()) or ():
                yield from _sums_in(handler.body, guarded)


def _filters_device_type(comp: ast.GeneratorExp | ast.ListComp) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "device_type"
               for gen in comp.generators for cond in gen.ifs for n in ast.walk(cond))


def _only_device_rows(comp: ast.GeneratorExp | ast.ListComp, ctx: ModuleContext) -> bool:
    """Rows filtered to kernels (`device_type == CUDA`) are leaves: their sum does not double
    count nesting, so it is left alone."""
    if _filters_device_type(comp):
        return True
    source = comp.generators[0].iter
    if isinstance(source, ast.Name):
        values = ctx.assigned_values().get(source.id, [])
        return bool(values) and all(isinstance(v, (ast.ListComp, ast.GeneratorExp))
                                    and _filters_device_type(v) for v in values)
    return False


def _inclusive_attr(node: ast.AST) -> str | None:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and _INCLUSIVE_TIME.match(sub.attr):
            return sub.attr
    return None


def _iterates_profiler_rows(node: ast.AST) -> bool:
    return any(isinstance(s, ast.Call) and terminal_name(s.func) in ("key_averages", "events")
               or isinstance(s, ast.Attribute) and s.attr == "function_events"
               for s in ast.walk(node))


def _records_first_step(call: ast.Call, ctx: ModuleContext) -> bool:
    """True when the profiler records from the loop's first step: no schedule, or a schedule
    with no skipped, waiting or warm-up step. A schedule we cannot read counts as False."""
    kw = _keyword(call, "schedule")
    if kw is None:
        return not _has_star_kwargs(call)
    sched = kw.value
    if not (isinstance(sched, ast.Call) and (ctx.dotted(sched.func) or "").endswith("schedule")):
        return False
    for name in ("skip_first", "wait", "warmup"):
        arg = _keyword(sched, name)
        if arg is not None and not (isinstance(arg.value, ast.Constant) and arg.value.value == 0):
            return False
    return True


def check_ss502(ctx: ModuleContext, path: str) -> Iterator[Diagnostic]:
    for window in profiler_windows(ctx):
        call = window.call
        if ctx.is_torch_profile_call(call) != "torch.profiler":
            continue
        if not _records_first_step(call, ctx):
            continue  # the first batch read falls in a step the profiler skips
        nodes = {(n.lineno, n.col_offset): n for n in ctx.loop_nodes
                 if window.first <= n.lineno <= window.last and n.col_offset >= window.loop_col
                 and isinstance(n, (ast.For, ast.AsyncFor))}
        for pos in sorted(nodes):
            node = nodes[pos]
            loop = ctx.loop_by_pos.get(pos)
            if loop is None or not ctx.runs_steps(loop) or not loop.header_fetch:
                continue
            source = _unwrap(node.iter)
            if not isinstance(source, (ast.Name, ast.Attribute)) or _is_iterator(source, ctx):
                continue
            name = ctx.source_of(source) or "loader"
            line, byte_col = window.opener
            indent = ctx.col(line, byte_col)
            s_line, s_col, s_end_line, s_end_col = ctx.span(source)
            # in a loop of the window (epochs), one iterator made before it would be spent after
            # the first pass: the fix would train on one epoch
            repeated = any(n is not node and window.first <= n.lineno < node.lineno
                           and (n.end_lineno or 0) >= (node.end_lineno or 0) for n in ctx.loop_nodes)
            fix = Fix("Create the iterator before the profiled window", (
                Edit(line, indent, line, indent, f"batches = iter({name})\n" + " " * indent),
                Edit(s_line, s_col, s_end_line, s_end_col, "batches"),
            )) if "batches" not in ctx.text and not repeated else None
            yield make_diagnostic(
                "SS502",
                f"iterating `{name}` inside the profiled window creates its iterator (and a "
                f"DataLoader's worker processes) there; create it with iter() before the window "
                f"so start-up is not mixed into the steps",
                path, ctx.span(source), fixes=(fix,) if fix else ())
            break  # one per window: the first loop is the one that starts the iterator


_ITERATOR_FACTORIES = ("iter", "cycle", "islice")


def _unwrap(node: ast.AST) -> ast.AST:
    while isinstance(node, ast.Call) and terminal_name(node.func) in ("enumerate", "tqdm", "iter"):
        if not node.args:
            break
        node = node.args[0]
    return node


def _is_iterator(node: ast.AST, ctx: ModuleContext) -> bool:
    """`it = iter(loader)` earlier: already an iterator, nothing is created in the window."""
    if not isinstance(node, ast.Name):
        return False
    for value in ctx.assigned_values().get(node.id, []):
        if isinstance(value, ast.Call) and terminal_name(value.func) in _ITERATOR_FACTORIES:
            return True
    return is_range_like(node)
