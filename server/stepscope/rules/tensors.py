"""SS501: a constant tensor built on the host and moved to the device inside the step loop.

Reported when a tensor factory (`torch.tensor`, `torch.as_tensor`, `torch.ones`, ...) whose
arguments are all constants (literals, or names set once to a literal outside the loop) is placed
on a device: with `device=...`, or followed by `.to(...)` / `.cuda()`. Every step then pays a
host-to-device copy of the same values. The quick fix (`hoist.py`, worked out when an editor or
`stepscope check --fix` asks) builds it once above the loop, or on the device where sharing one
tensor between the steps could change the results.
"""

from __future__ import annotations

import ast
import re
import bisect
from typing import Iterator

from ..source.loops import terminal_name
from .context import ModuleContext
from .model import Diagnostic, make_diagnostic
from .sync import is_test_path

_FACTORIES = frozenset({"tensor", "as_tensor", "ones", "zeros", "full", "arange", "eye",
                        "linspace", "FloatTensor", "LongTensor", "Tensor"})
_COPYING_FACTORIES = frozenset({"tensor", "as_tensor", "FloatTensor", "LongTensor", "Tensor"})
_SHAPE_METHODS = frozenset({"view", "reshape", "unsqueeze", "float", "half", "long", "double",
                            "int", "bool", "t", "expand", "contiguous", "repeat", "squeeze"})


def constant_names(ctx: ModuleContext) -> dict[str, bool]:
    """name -> True when every assignment of it (anywhere in the module) is a literal constant."""
    if ctx.summary is not None:
        return ctx.summary.constant_names
    return constant_names_of(ctx.assigns, ctx.loop_nodes, ctx.functions_defs)


def constant_names_of(assigns, loop_nodes, functions_defs) -> dict[str, bool]:
    """What `constant_names` reads from some assignments, loops and functions."""
    result: dict[str, bool] = {}
    for node in assigns:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = node.value if not isinstance(node, ast.AugAssign) else None
        for target in targets:
            literal = value is not None and isinstance(target, ast.Name) and _is_literal(value)
            for sub in ast.walk(target):
                if isinstance(sub, ast.Name):
                    result[sub.id] = result.get(sub.id, True) and literal
    for loop in loop_nodes:
        if isinstance(loop, (ast.For, ast.AsyncFor)):
            for sub in ast.walk(loop.target):
                if isinstance(sub, ast.Name):
                    result[sub.id] = False
    for fn in functions_defs:
        for arg in [*fn.args.args, *fn.args.kwonlyargs, *fn.args.posonlyargs]:
            result[arg.arg] = False
    return result


_MATH_CONSTANTS = frozenset({"inf", "nan", "pi", "e", "tau"})


def _is_literal(node: ast.AST) -> bool:
    """A number, a list of numbers, `[0.5] * 1024`, `-math.inf`, `float("inf")`."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float, complex, bool))
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_is_literal(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _is_literal(node.operand)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add, ast.Sub, ast.Div,
                                                             ast.Pow)):
        return _is_literal(node.left) and _is_literal(node.right)
    if isinstance(node, ast.Attribute):
        return isinstance(node.value, ast.Name) and node.value.id in ("math", "np", "numpy") \
            and node.attr in _MATH_CONSTANTS
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float":
        return len(node.args) == 1 and isinstance(node.args[0], ast.Constant) \
            and isinstance(node.args[0].value, str)
    return False


def _is_invariant(node: ast.AST, constants: dict[str, bool], assigned_in_loop: set[str]) -> bool:
    if _is_literal(node):
        return True
    if isinstance(node, ast.Name):
        return constants.get(node.id, False) and node.id not in assigned_in_loop
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_is_invariant(e, constants, assigned_in_loop) for e in node.elts)
    if isinstance(node, ast.Attribute):  # dtypes: torch.float32; math.inf
        return isinstance(node.value, ast.Name) and node.value.id == "torch" or _is_literal(node)
    if isinstance(node, ast.UnaryOp):
        return _is_invariant(node.operand, constants, assigned_in_loop)
    return False


def _factory_of(node: ast.AST, ctx: ModuleContext) -> ast.Call | None:
    """The torch factory call at the root of a `.view(...).float()` chain, if any."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in _SHAPE_METHODS:
        node = node.func.value
    if isinstance(node, ast.Call):
        dotted = ctx.dotted(node.func) or ""
        if dotted.startswith("torch.") and dotted.split(".")[-1] in _FACTORIES \
                and dotted.count(".") == 1:
            return node
    return None


def check_ss501(ctx: ModuleContext, path: str) -> Iterator[Diagnostic]:
    constants: dict[str, bool] | None = None
    loop_names: dict[int, set[str]] = {}
    reported: set[int] = set()
    if ctx.other_framework or is_test_path(path):
        return
    for call, scope in ctx.calls:
        if scope.step_loop is None or scope.infrequent or scope.test:
            continue  # not every step: an `except` handler, `if i == 0:`
        loop = ctx.repeated_step_loop(scope)
        if loop is None:
            continue  # a warm-up or a sweep over a few settings
        factory: ast.Call | None = None
        expr: ast.Call = call
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in ("to", "cuda"):
            factory = _factory_of(func.value, ctx)
            if factory is not None and not _moves_to_a_device(call, ctx):
                factory = None  # `.to(torch.float16)`: a conversion on the host
        else:
            candidate = _factory_of(call, ctx)
            if candidate is call and any(k.arg == "device" and not (
                    isinstance(k.value, ast.Constant) and k.value.value == "cpu")
                    for k in call.keywords):
                factory = call
                if terminal_name(call.func) not in _COPYING_FACTORIES:
                    factory = None  # filled on the device: no host-to-device copy
        if factory is None or id(factory) in reported:
            continue
        if constants is None:
            constants = constant_names(ctx)
        if loop.line not in loop_names:
            loop_names[loop.line] = _names_assigned_between(ctx, loop.line, loop.end_line)
        args = [*factory.args, *(k.value for k in factory.keywords if k.arg != "device")]
        constant = all(_is_invariant(a, constants, loop_names[loop.line]) for a in args)
        filled = terminal_name(factory.func) in _FILLS and factory is not call
        if not (constant or filled):
            continue  # data that changes every step
        reported.add(id(factory))
        if constant:
            yield make_diagnostic(
                "SS501",
                f"this constant tensor is built on the host and copied to the device on every "
                f"step of the loop at line {loop.line}; build it once before the loop",
                path, ctx.span(expr))
        else:
            yield make_diagnostic(
                "SS501",
                f"this tensor is filled on the host and copied to the device on every step of "
                f"the loop at line {loop.line}; create it on the device (`device=...`, or "
                f"`torch.ones_like(x)`)",
                path, ctx.span(expr))


_FILLS = frozenset({"zeros", "ones", "full", "empty", "arange", "eye", "linspace"})
_DTYPES = re.compile(r"^(float|double|half|bfloat16|int|long|short|bool|uint8|int8|int16|int32"
                     r"|int64|float16|float32|float64|complex64|complex128|float8\w*)$")


def _moves_to_a_device(call: ast.Call, ctx: ModuleContext) -> bool:
    """`x.cuda()`, `x.to(device)`, `x.to(other)`; not `x.to(torch.float16)` or `x.to(dtype)`."""
    func = call.func
    assert isinstance(func, ast.Attribute)
    if func.attr == "cuda":
        return True
    if any(k.arg == "device" for k in call.keywords):
        return True
    return any(not _is_dtype(a, ctx) for a in call.args)


def _is_dtype(node: ast.AST, ctx: ModuleContext) -> bool:
    if isinstance(node, ast.Attribute):
        return (ctx.dotted(node) or "").startswith("torch.") and bool(_DTYPES.match(node.attr)) \
            or "dtype" in node.attr
    return isinstance(node, ast.Name) and "dtype" in node.id.lower()


def _is_device_call(node: ast.AST, ctx: ModuleContext) -> bool:
    return isinstance(node, ast.Call) and (ctx.dotted(node.func) or "") == "torch.device"


def _names_assigned_between(ctx: ModuleContext, start: int, end: int) -> set[str]:
    stores = ctx.stores  # recorded in source order, so sorted by line
    lo = bisect.bisect_left(stores, (start, ""))
    hi = bisect.bisect_right(stores, (end, "\uffff"))
    return {name for _, name in stores[lo:hi]}
