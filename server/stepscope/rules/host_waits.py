"""What inside a timed interval makes the host wait for the device, beyond an explicit sync (SS201).

Each test here answers "yes" only where the source shows it; a "no" leaves the interval to the
other tests. A "yes" silences SS201, so every test leans towards "no" when unsure:
  - an index that needs a count on the host: a boolean mask of a device tensor (`x[x > 0]`,
    `x[mask]` with `mask = y != 0`), or a CPU index tensor into a device tensor (`x[idx]` with
    `idx = torch.randperm(n)`); integer and slice indexes never count;
  - a blocking copy of host data to the device (`.to(device)`, `.cuda()` without
    `non_blocking=True`) before any device work of an interval inside a loop: the copy waits for
    the previous step's work, so the interval is in effect one link of a chained timer;
  - a wait on an RPC future or a blocking RPC call (`fut.wait()`, `rref.to_here()`,
    `rpc.rpc_sync(...)`, `torch.futures.wait_all(...)`, `dist_autograd.backward(...)`).
"""

from __future__ import annotations

import ast

from ..source.loops import terminal_name
from .context import (FunctionFacts, ModuleContext, _is_loader, _target_names, host_here,
                      is_tensor_expr, iter_own_nodes_all)

# Methods and torch functions that build a boolean mask from a tensor.
_MASK_METHODS = frozenset({"eq", "ne", "gt", "ge", "lt", "le", "isnan", "isinf", "isfinite",
                           "isneginf", "isposinf", "logical_and", "logical_or", "logical_not",
                           "logical_xor", "bool", "isin"})
# Calls whose result's size depends on the data: the host reads a count before it can return.
_DATA_SIZED = frozenset({"nonzero", "argwhere", "masked_select", "unique", "unique_consecutive"})
# torch functions that build a tensor on the host unless given a device.
_HOST_TENSOR_FACTORIES = frozenset({"tensor", "as_tensor", "Tensor", "LongTensor", "IntTensor",
                                    "BoolTensor", "arange", "randperm", "randint", "from_numpy"})
_RPC_CHAIN = frozenset({"rpc_sync", "rpc_async", "remote", "to_here"})


# ---- data-sized results and mask indexing ------------------------------------------------------
def sizes_by_data(call: ast.Call, ctx: ModuleContext) -> bool:
    """`torch.nonzero(m)`, `x.masked_select(m)`, `torch.where(cond)` (one argument): the size of
    the result is a count the host must read from the device."""
    name = terminal_name(call.func) or ""
    if name in _DATA_SIZED:
        return True
    return ctx.dotted(call.func) == "torch.where" and len(call.args) == 1 and not call.keywords


def indexes_by_data(interval_nodes: list[ast.AST], facts: FunctionFacts, ctx: ModuleContext) -> bool:
    """A subscript read among `interval_nodes` indexes a device tensor with a boolean mask or a
    CPU index tensor (both wait for the device)."""
    return any(isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)
               and _index_waits(node, facts, ctx) for node in interval_nodes)


def _index_waits(node: ast.Subscript, facts: FunctionFacts, ctx: ModuleContext) -> bool:
    if host_here(node.value, facts, ctx):
        return False  # indexing host data waits for nothing
    index = node.slice
    if _is_mask(index, facts, ctx, depth=0):
        return True
    return is_tensor_expr(node.value, facts.tensor_names, ctx) and _is_cpu_index(index, facts, ctx)


def _is_mask(node: ast.AST, facts: FunctionFacts, ctx: ModuleContext, depth: int) -> bool:
    """`node` is a boolean mask (or data-sized index) of a tensor, written here or in the nearest
    assignment of the name above it. Integers, slices and tuples of them are not masks."""
    if depth > 3:
        return False
    if isinstance(node, ast.Compare):
        return any(not isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops) \
            and any(_device_tensor(x, facts, ctx) for x in [node.left, *node.comparators])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return _is_mask(node.operand, facts, ctx, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
        return _is_mask(node.left, facts, ctx, depth + 1) or _is_mask(node.right, facts, ctx, depth + 1)
    if isinstance(node, ast.Call):
        name = terminal_name(node.func) or ""
        if sizes_by_data(node, ctx):
            return True
        if name not in _MASK_METHODS or not isinstance(node.func, ast.Attribute):
            return False
        if ctx.dotted(node.func) == f"torch.{name}":  # `torch.isnan(x)`
            return bool(node.args) and is_tensor_expr(node.args[0], facts.tensor_names, ctx)
        return is_tensor_expr(node.func.value, facts.tensor_names, ctx)  # `x.eq(y)`
    if isinstance(node, ast.Name):
        value = _nearest_value(node, facts)
        return value is not None and _is_mask(value, facts, ctx, depth + 1)
    return False


def _device_tensor(node: ast.AST, facts: FunctionFacts, ctx: ModuleContext) -> bool:
    """A tensor not known to be on the host (`logits`, `logits.max(1).values`, `out.argmax(1)`)."""
    while isinstance(node, ast.Attribute) and node.attr in ("values", "indices"):
        node = node.value
    return is_tensor_expr(node, facts.tensor_names, ctx) and not host_here(node, facts, ctx)


def _is_cpu_index(node: ast.AST, facts: FunctionFacts, ctx: ModuleContext) -> bool:
    """`node` is a tensor on the host: a torch factory with no device (`torch.randperm(n)`), a
    `.cpu()` result, or a name set to one of these just above."""
    if isinstance(node, ast.Name):
        value = _nearest_value(node, facts)
        return value is not None and not isinstance(value, ast.Name) \
            and _is_cpu_index(value, facts, ctx)
    if not isinstance(node, ast.Call):
        return False
    if isinstance(node.func, ast.Attribute) and node.func.attr == "cpu" and not node.args:
        return True
    dotted = ctx.dotted(node.func) or ""
    return dotted.startswith("torch.") and dotted.count(".") == 1 \
        and dotted.split(".")[1] in _HOST_TENSOR_FACTORIES \
        and not any(k.arg == "device" for k in node.keywords)


def _nearest_value(name: ast.Name, facts: FunctionFacts) -> ast.expr | None:
    """The value the last assignment above the read gives `name`: `v` of `name = v`, `b` of
    `name, other = a, b`'s matching element, or the whole `batch` of `name, other = batch`."""
    best: tuple[int, ast.expr] | None = None
    for assign in facts.assigns:
        if not isinstance(assign, ast.Assign) or assign.lineno >= name.lineno \
                or (best is not None and assign.lineno <= best[0]):
            continue
        for target in assign.targets:
            value = _value_for(target, assign.value, name.id)
            if value is not None:
                best = (assign.lineno, value)
    return best[1] if best is not None else None


def _value_for(target: ast.expr, value: ast.expr, name: str) -> ast.expr | None:
    if isinstance(target, ast.Name):
        return value if target.id == name else None
    if not isinstance(target, (ast.Tuple, ast.List)) or name not in _target_names(target):
        return None
    if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
        for part_target, part_value in zip(target.elts, value.elts):
            found = _value_for(part_target, part_value, name)
            if found is not None:
                return found
        return None
    return value  # unpacking one value: every name comes from it


def nodes_between(facts: FunctionFacts, first_line: int, last_line: int) -> list[ast.AST]:
    """The function's own nodes that start after `first_line` and no later than `last_line`."""
    body = facts.node.body if hasattr(facts.node, "body") else []
    return [n for n in iter_own_nodes_all(body)
            if first_line < getattr(n, "lineno", 0) <= last_line]


# ---- a blocking copy of host data --------------------------------------------------------------
def is_blocking_copy_to_device(call: ast.Call, ctx: ModuleContext) -> bool:
    """`.cuda()` or `.to(<a device>)` without `non_blocking=True`: a copy of host data the host
    waits on (`.to(torch.float16)` changes the type, not the place, and does not count)."""
    if not isinstance(call.func, ast.Attribute):
        return False
    if any(k.arg == "non_blocking" and not (isinstance(k.value, ast.Constant)
                                             and k.value.value is False) for k in call.keywords):
        return False
    if call.func.attr == "cuda":
        return len(call.args) < 2
    if call.func.attr != "to":
        return False
    targets = [*call.args[:1], *(k.value for k in call.keywords if k.arg == "device")]
    return len(call.args) < 3 and any(names_a_device(t) for t in targets)


def names_a_device(node: ast.AST) -> bool:
    """`device`, `self.device`, `args.dev`, `"cuda"`, `"cuda:0"`, `torch.device(...)`, `rank`."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value.startswith("cuda")
    if isinstance(node, ast.Call):
        return terminal_name(node.func) == "device"
    return is_device_name(_lowered_name(node))


def is_device_name(name: str) -> bool:
    """A variable or parameter name that reads like a device (`device`, `train_device`, `dev`)."""
    lowered = name.lower()
    return "device" in lowered or lowered in ("dev", "gpu", "cuda", "rank", "local_rank")


def copies_host_data(call: ast.Call, facts: FunctionFacts, ctx: ModuleContext) -> bool:
    """The receiver of the copy holds host data: a host value where it is read, or (part of) the
    batch a `for` loop takes from a data loader, not re-bound before the copy."""
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    if receiver is None:
        return False
    if host_here(receiver, facts, ctx):
        return True
    return _from_loader_batch(receiver, call.lineno, facts, ctx, depth=0)


def _from_loader_batch(node: ast.AST, line: int, facts: FunctionFacts, ctx: ModuleContext,
                       depth: int) -> bool:
    while isinstance(node, ast.Subscript) or (
            isinstance(node, ast.Attribute) and node.attr == "data"):
        node = node.value
    if not isinstance(node, ast.Name) or depth > 2:
        return False
    for loop in facts.loops:
        if isinstance(loop, ast.While) or not loop.lineno < line <= (loop.end_lineno or 0):
            continue
        source = loop.iter
        while isinstance(source, ast.Call) and terminal_name(source.func) in (
                "enumerate", "tqdm", "zip", "iter") and source.args:
            source = source.args[0]
        if node.id in _target_names(loop.target) and _is_loader(source, ctx) and not any(
                loop.lineno < a.lineno < line and _binds(a, node.id) for a in facts.assigns):
            return True
    value = _nearest_value(node, facts)  # `x, y = batch` / `x = batch["image"]`
    return value is not None and _from_loader_batch(value, line, facts, ctx, depth + 1)


def _binds(assign: ast.AST, name: str) -> bool:
    targets = assign.targets if isinstance(assign, ast.Assign) else [getattr(assign, "target", None)]
    return any(t is not None and name in _target_names(t) for t in targets)


# ---- RPC -----------------------------------------------------------------------------------------
def waits_for_rpc(call: ast.Call, ctx: ModuleContext) -> bool:
    """The call blocks the host on remote work: `fut.wait()` on an RPC future, `rref.to_here()`,
    `torch.futures.wait_all(...)`, `dist_autograd.backward(...)` (a blocking distributed pass).
    A collective's `work.wait()` or an event's `wait()` only orders streams and does not count."""
    name = terminal_name(call.func) or ""
    if name in ("to_here", "wait_all"):
        return True
    dotted = ctx.dotted(call.func) or ""
    if dotted == "torch.distributed.autograd.backward":
        return True
    if name == "wait" and isinstance(call.func, ast.Attribute) and not call.args:
        receiver = call.func.value
        if isinstance(receiver, ast.Call):
            return terminal_name(receiver.func) in ("rpc_async", "collect_all", "then")
        lowered = _lowered_name(receiver)
        return "fut" in lowered or "rref" in lowered
    return False


def is_remote_work(call: ast.Call, ctx: ModuleContext) -> bool:
    """Work another process runs (`rpc.rpc_async(...)`, `rref.rpc_sync().forward(x)`, anything of
    `torch.distributed`): nothing this process queues on its own device."""
    if (ctx.dotted(call.func) or "").startswith("torch.distributed."):
        return True
    if terminal_name(call.func) == "step" and any(
            "context" in n or "ctx" in n for n in map(_lowered_name, call.args)):
        return True  # a `DistributedOptimizer`'s `opt.step(context_id)`
    node: ast.AST = call.func
    while isinstance(node, (ast.Attribute, ast.Call)):
        if isinstance(node, ast.Call):
            if terminal_name(node.func) in _RPC_CHAIN:
                return True
            node = node.func
        else:
            node = node.value
    return False


def _lowered_name(node: ast.AST) -> str:
    return (terminal_name(node) or "").lower() if isinstance(node, (ast.Name, ast.Attribute)) else ""
