"""SS501's quick fix: build a constant once before the step loop, or build it on the device.

    fix = constant_fix(diag, src)   # None when no fix keeps what the program computes

Hoisting shares one tensor between every step. That keeps the results only when nothing can
change that tensor or keep it beyond the statement that uses it, so the expression is hoisted
only when its value
- is never mutated in place (`x += ...`, `x.add_(...)`, `x[...] = ...`, `x.attr = ...`, `out=x`,
  a call whose name ends in `_`, `nn.Parameter(x)`), directly or through a view of it
  (`x.view(...)`, `x[0]`, `x.to(...)` may return the tensor itself);
- is never rebound in the loop once given a name (an accumulator is), never aliased to another name,
  never stored (a container, an attribute, an item), returned or yielded, never captured by a
  function or lambda defined in the loop;
- is not put in a container: `{k: torch.tensor(0.0, device=d) for k in keys}` gives each key a
  tensor of its own (built in a comprehension or an inner loop, a value only read may be shared);
- is not built in a function or lambda defined in the loop;
- does not ask for gradients (`requires_grad=True`: its `.grad` would add up over the steps);
- reads no name the loop assigns (`device = batch.device`).

Otherwise, for a scalar built on the host and copied (`torch.tensor(0.0, device=device)`,
`torch.tensor(1).to(device)`, `.cuda()`), the fix builds the same value on the device each step:
`torch.zeros((), device=device)`, `torch.ones(...)`, `torch.full((), v, ...)`, with the dtype
`torch.tensor` would have given it (a Python float: the default dtype, as `torch.zeros` has; an
int: `torch.long`; a bool: `torch.bool`; an explicit `dtype=` kept). Anything else gets no fix;
the finding stays.

Invariants: a hoist's name appears nowhere in the text, and two hoists worked out from the same text
(the file's SS501 findings, in order) never get the same name; edits never overlap.
"""

from __future__ import annotations

import ast
import functools
import math
import re

from ..source.loops import terminal_name
from .model import Diagnostic, Edit, Fix

HOIST_BASE = "const_tensor"
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
# Methods and attributes whose result may be the tensor itself or share its memory.
_ALIASING = frozenset({"view", "view_as", "reshape", "reshape_as", "unsqueeze", "squeeze", "t", "T",
                       "mT", "H", "mH", "expand", "expand_as", "contiguous", "to", "cuda", "cpu", "float",
                       "half", "double", "long", "int", "bool", "bfloat16", "type", "type_as", "detach",
                       "data", "narrow", "select", "as_strided", "permute", "transpose", "flatten",
                       "unflatten", "movedim", "real", "imag", "diagonal", "unbind", "split", "chunk",
                       "view_as_real", "numpy", "pin_memory"})
# Calls that keep or mutate what they are given.
_KEEPING_CALLS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "put",
                            "Parameter", "register_buffer", "register_parameter", "setattr",
                            "copy_", "set_", "put_nowait", "__setitem__"})
_LOOP_LINE = re.compile(r"loop at line (\d+)")
_HOST_FACTORIES = frozenset({"tensor", "as_tensor"})


def constant_fix(diag: Diagnostic, src) -> Fix | None:
    """The SS501 fix for `diag` on `src` (quickfix's parsed text), or None."""
    plan = _plan(diag, src)
    if plan is None:
        return None
    kind, expr, loop = plan
    if kind == "device":
        return _on_device(expr, src)
    names = _hoist_names(src.text, diag.path)
    name = names.get((diag.line, diag.col, diag.end_line, diag.end_col))
    if name is None:
        return None
    code = src.segment(expr)
    if not code or "\n" in code:
        return None
    indent = src.indent(loop.lineno)
    line, col, end_line, end_col = src.span(expr)
    return Fix("Build this tensor once, before the loop", (
        Edit(loop.lineno, 0, loop.lineno, 0, f"{indent}{name} = {code}\n"),
        Edit(line, col, end_line, end_col, name),
    ))


def _plan(diag: Diagnostic, src) -> tuple[str, ast.Call, ast.stmt] | None:
    """("hoist" | "device", the expression, the step loop) for an SS501 finding."""
    expr = src.at(diag, ast.Call)
    found = _LOOP_LINE.search(diag.message)
    if expr is None or found is None:
        return None
    loop = _enclosing_loop(src, expr, int(found.group(1)))
    if loop is None:
        return None
    if _hoistable(src, expr, loop):
        return "hoist", expr, loop
    return "device", expr, loop


def _enclosing_loop(src, node: ast.AST, line: int) -> ast.stmt | None:
    here = src.parent.get(node)
    while here is not None:
        if isinstance(here, _LOOPS) and here.lineno == line:
            return here
        if isinstance(here, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return None
        here = src.parent.get(here)
    return None


# -- is sharing one tensor between the steps safe? ---------------------------------------------------
def _hoistable(src, expr: ast.Call, loop: ast.stmt) -> bool:
    if _asks_for_grad(expr):
        return False
    stored = _stored_in(loop)
    if any(isinstance(n, ast.Name) and n.id in stored for n in ast.walk(expr)):
        return False  # reads a name the loop sets: the value may differ from step to step
    if _inside_function(src, expr, loop):
        return False  # built when a function defined in the loop is called: keep it there
    return _stays_read_only(src, expr, loop, stored, depth=0)


def _asks_for_grad(expr: ast.AST) -> bool:
    return any(isinstance(n, ast.keyword) and n.arg == "requires_grad"
               and not (isinstance(n.value, ast.Constant) and n.value.value is False) for n in ast.walk(expr))


def _stored_in(loop: ast.stmt) -> dict[str, int]:
    """name -> how many times the loop (header included) binds it."""
    counts: dict[str, int] = {}
    for node in ast.walk(loop):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            counts[node.id] = counts.get(node.id, 0) + 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                counts[name] = counts.get(name, 0) + 2
    return counts


def _stays_read_only(src, value: ast.AST, loop: ast.stmt, stored: dict[str, int], depth: int) -> bool:
    """Whether the tensor `value` evaluates to is only read where it flows: never mutated, kept or
    sent out of the step."""
    if depth > 8:
        return False
    parent = src.parent.get(value)
    if isinstance(parent, ast.Attribute) and parent.value is value:
        call = src.parent.get(parent)
        is_call = isinstance(call, ast.Call) and call.func is parent
        if isinstance(parent.ctx, (ast.Store, ast.Del)) or parent.attr.endswith("_") \
                or parent.attr in _KEEPING_CALLS:
            return False  # `x.grad = ...`, `x.add_(...)`, `x.copy_(...)`
        if parent.attr in _ALIASING:  # the result may be this very tensor
            return _stays_read_only(src, call if is_call else parent, loop, stored, depth + 1)
        return True  # a new tensor or a plain value (`.sum()`, `.shape`, `.item()`)
    if isinstance(parent, ast.Subscript) and parent.value is value:
        if not isinstance(parent.ctx, ast.Load):
            return False  # `x[...] = ...`
        return _stays_read_only(src, parent, loop, stored, depth + 1)  # a view
    if isinstance(parent, ast.Subscript):  # used as an index: read
        return True
    if isinstance(parent, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.FormattedValue, ast.Expr)):
        return True  # a new tensor, a truth value, text, or nothing kept
    if isinstance(parent, ast.AugAssign):
        return parent.value is value  # `y += x` reads x
    if isinstance(parent, ast.IfExp) and parent.test is value:
        return True
    if isinstance(parent, (ast.BoolOp, ast.IfExp)):  # the value itself may be the result
        return _stays_read_only(src, parent, loop, stored, depth + 1)
    if isinstance(parent, ast.keyword):
        call = src.parent.get(parent)
        return parent.arg != "out" and isinstance(call, ast.Call) and _call_reads(call)
    if isinstance(parent, ast.Call) and value in parent.args:
        return _call_reads(parent)
    if isinstance(parent, ast.Assign) and parent.value is value and len(parent.targets) == 1 \
            and isinstance(parent.targets[0], ast.Name):
        return _name_read_only(src, parent.targets[0].id, parent, loop, stored, depth)
    if isinstance(parent, ast.AnnAssign) and parent.value is value and isinstance(parent.target, ast.Name):
        return _name_read_only(src, parent.target.id, parent, loop, stored, depth)
    return False  # returned, yielded, stored, put in a container, unpacked: kept beyond the statement


def _call_reads(call: ast.Call) -> bool:
    """A call that only reads its arguments, as far as the code shows (not `F.relu(x, inplace=True)`)."""
    name = terminal_name(call.func) or ""
    in_place = any(k.arg == "inplace" and not (isinstance(k.value, ast.Constant) and k.value.value is False)
                   for k in call.keywords)
    return not (name.endswith("_") or name in _KEEPING_CALLS or in_place)


def _name_read_only(src, name: str, assign: ast.stmt, loop: ast.stmt, stored: dict[str, int],
                    depth: int) -> bool:
    if stored.get(name, 0) != 1:
        return False  # rebound in the loop (an accumulator), deleted, or declared global
    for node in ast.walk(loop):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
            if _inside_function(src, node, loop):
                return False  # a closure sees later values of the name
            if not _stays_read_only(src, node, loop, stored, depth + 1):
                return False
    return True


def _inside_function(src, node: ast.AST, loop: ast.stmt) -> bool:
    here = src.parent.get(node)
    while here is not None and here is not loop:
        if isinstance(here, _SCOPES):
            return True
        here = src.parent.get(here)
    return False


# -- the names of hoists ------------------------------------------------------------------------------
@functools.lru_cache(maxsize=8)
def _hoist_names(text: str, path: str) -> dict[tuple[int, int, int, int], str]:
    """The name of each SS501 hoist worked out from `text`, by the finding's range: `const_tensor`,
    `const_tensor_2`, ... in the findings' order, each absent from the text."""
    from .config import Config
    from .engine import check_source
    from .quickfix import parse_source

    src = parse_source(text)
    if src is None:
        return {}
    names: dict[tuple[int, int, int, int], str] = {}
    counter = 1
    for diag in check_source(text, path, Config(select=("SS501",))):
        plan = _plan(diag, src)
        if plan is None or plan[0] != "hoist":
            continue
        name = HOIST_BASE if counter == 1 else f"{HOIST_BASE}_{counter}"
        while re.search(rf"\b{name}\b", text):
            counter += 1
            name = f"{HOIST_BASE}_{counter}"
        counter += 1
        names[(diag.line, diag.col, diag.end_line, diag.end_col)] = name
    return names


# -- build it on the device ---------------------------------------------------------------------------
def _on_device(expr: ast.Call, src) -> Fix | None:
    """`torch.tensor(0.0, device=d)` / `torch.tensor(0.0).to(d)` / `.cuda()` as a fill on the device."""
    func = expr.func
    if isinstance(func, ast.Attribute) and func.attr in ("to", "cuda"):
        factory = func.value
        device = _move_target(expr, src)
    else:
        factory = expr
        device = None
    if not (isinstance(factory, ast.Call) and isinstance(factory.func, ast.Attribute)
            and factory.func.attr in _HOST_FACTORIES and len(factory.args) == 1):
        return None
    value = _scalar(factory.args[0])
    if value is None:
        return None
    module = src.segment(factory.func.value)
    keywords: dict[str, str] = {}
    for kw in factory.keywords:
        if kw.arg not in ("device", "dtype", "requires_grad"):
            return None
        keywords[kw.arg] = src.segment(kw.value) or ""
    if device is not None:
        if "device" in keywords:
            return None  # moved twice: not a shape worth a rewrite
        keywords["device"] = device
    if "device" not in keywords or not module or not all(keywords.values()):
        return None
    if "dtype" not in keywords and not isinstance(value, float):
        keywords["dtype"] = f"{module}.bool" if isinstance(value, bool) else f"{module}.long"
    if value == 1 or value == 0 and math.copysign(1.0, value) > 0:  # -0.0 keeps its sign with full()
        call = f"{module}.{'zeros' if value == 0 else 'ones'}(()"
    else:
        call = f"{module}.full((), {src.segment(factory.args[0])}"
    order = [k for k in ("dtype", "device", "requires_grad") if k in keywords]
    code = call + "".join(f", {k}={keywords[k]}" for k in order) + ")"
    line, col, end_line, end_col = src.span(expr)
    return Fix(f"Create this value on the device: {code}", (Edit(line, col, end_line, end_col, code),))


def _scalar(node: ast.AST) -> int | float | bool | None:
    """The Python number a literal stands for (`0.0`, `-1`, `True`), or None."""
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        sign = -1 if isinstance(node.op, ast.USub) else 1
        node = node.operand
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return None
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float)):
        return node.value if isinstance(node.value, bool) else sign * node.value
    return None


def _move_target(call: ast.Call, src) -> str | None:
    """The device a `.to(...)` / `.cuda(...)` moves to, as code for `device=`; None when the move
    also converts (`.to(other_tensor)` takes its dtype too) or is not clear."""
    func = call.func
    assert isinstance(func, ast.Attribute)
    extra = [k for k in call.keywords if k.arg not in ("non_blocking", "device")]
    if extra:
        return None
    device_kw = next((k for k in call.keywords if k.arg == "device"), None)
    if func.attr == "cuda":
        if device_kw is not None:
            return src.segment(device_kw.value)
        return src.segment(call.args[0]) if len(call.args) == 1 else ('"cuda"' if not call.args else None)
    if device_kw is not None:
        return src.segment(device_kw.value) if not call.args else None
    if len(call.args) != 1:
        return None
    target = call.args[0]
    if isinstance(target, ast.Constant) and isinstance(target.value, str) \
            and target.value.split(":")[0] in ("cuda", "cpu", "mps", "xpu"):
        return src.segment(target)
    if isinstance(target, ast.Call) and terminal_name(target.func) == "device":
        return src.segment(target)
    word = (terminal_name(target) or "").lower() if isinstance(target, (ast.Name, ast.Attribute)) else ""
    if "device" in word or word in ("dev", "cuda_device"):
        return src.segment(target)
    return None
