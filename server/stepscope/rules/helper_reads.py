"""Read-backs inside a helper the step calls: `log_metrics(loss)` whose body does `float(loss)`,
`metric_logger.update(loss=loss)` whose `update` calls `.item()` on its values.

Only functions defined in the same module are followed (the rules check one file at a time), at
most two calls deep: the helper itself, and a helper it hands the value to. A callee is known by
its name alone, so it is followed only where the module defines exactly one function (or, for
`obj.name(...)`, exactly one method) of that name.

Invariant: `parameter_reads(fn)` maps a parameter of `fn` to where `fn`'s own body (not a nested
function) reads it on the host, or reads a value taken from it (`for k, v in kwargs.items():`), or
hands it to another followed helper that does. Positional parameters are keyed by their index
among the parameters a caller fills (after `self`/`cls` for a method), every parameter also by
its name, and `**kwargs` by `"**"`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterator

from ..source.loops import terminal_name
from .context import guard_kind

_METHOD_READS = {"item": "`.item()`", "cpu": "`.cpu()`", "tolist": "`.tolist()`",
                 "numpy": "`.numpy()`"}
_CONVERSIONS = ("float", "int", "bool")
# Tensor methods that keep a value where it is: a read of `v.detach().item()` reads `v`.
_SAME_PLACE = frozenset({"detach", "clone", "float", "double", "half", "mean", "sum", "data",
                         "squeeze", "reshape", "view", "contiguous"})
MAX_DEPTH = 2


@dataclass(frozen=True)
class HostRead:
    """Where a helper reads a value on the host: `how` (`.item()`, `float()`), on `line`, in
    the function named `function` (the helper itself or one it hands the value to)."""

    how: str
    line: int
    function: str


@dataclass(frozen=True)
class Helper:
    node: ast.FunctionDef
    is_method: bool

    def parameter_keys(self) -> dict[str, list[int | str]]:
        """name -> the keys a caller's arguments reach it by (see the module's invariant)."""
        args = self.node.args
        positional = [*args.posonlyargs, *args.args]
        if self.is_method and positional and not _is_static(self.node):
            positional = positional[1:]  # `self` / `cls`
        keys: dict[str, list[int | str]] = {}
        for index, arg in enumerate(positional):
            keys[arg.arg] = [index, arg.arg]
        for arg in args.kwonlyargs:
            keys[arg.arg] = [arg.arg]
        if args.kwarg is not None:
            keys[args.kwarg.arg] = ["**"]
        return keys


def _is_static(fn: ast.FunctionDef) -> bool:
    return any(terminal_name(d) == "staticmethod" for d in fn.decorator_list)


class HelperIndex:
    """The module's functions and methods by name, and what each reads of its parameters."""

    def __init__(self, tree: ast.Module):
        self.functions: dict[str, list[Helper]] = {}
        self.methods: dict[str, list[Helper]] = {}
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef):
                self.functions.setdefault(stmt.name, []).append(Helper(stmt, False))
            elif isinstance(stmt, ast.ClassDef):
                for member in stmt.body:
                    if isinstance(member, ast.FunctionDef):
                        self.methods.setdefault(member.name, []).append(Helper(member, True))
        self._reads: dict[int, dict[int | str, HostRead]] = {}

    def callee(self, call: ast.Call) -> Helper | None:
        """The one helper of the module a call runs, or None when it is not known for sure."""
        func = call.func
        if isinstance(func, ast.Name):
            found = self.functions.get(func.id, [])
        elif isinstance(func, ast.Attribute):
            found = self.methods.get(func.attr, [])
        else:
            return None
        return found[0] if len(found) == 1 else None

    def parameter_reads(self, helper: Helper, depth: int = 1) -> dict[int | str, HostRead]:
        key = id(helper.node)
        if key not in self._reads:
            self._reads[key] = {}  # a recursive helper sees no reads of its own
            self._reads[key] = self._find_reads(helper, depth)
        return self._reads[key]

    def _find_reads(self, helper: Helper, depth: int) -> dict[int | str, HostRead]:
        out: dict[int | str, HostRead] = {}
        for name, keys in helper.parameter_keys().items():
            read = self._read_of(helper.node, _aliases(helper.node, name), depth)
            if read is not None:
                for k in keys:
                    out[k] = read
        return out

    def _read_of(self, fn: ast.FunctionDef, names: set[str], depth: int) -> HostRead | None:
        """The first place `fn` reads one of `names` on the host, directly or (below
        `MAX_DEPTH`) through a helper it hands one to."""
        for node in _own_nodes(fn.body, every_call=True):
            if not isinstance(node, ast.Call):
                continue
            how = _direct_read(node, names)
            if how is not None:
                return HostRead(how, node.lineno, fn.name)
            if depth < MAX_DEPTH:
                inner = self.callee(node)
                if inner is None or inner.node is fn:
                    continue
                reads = self.parameter_reads(inner, depth + 1)
                for key, arg in argument_keys(node):
                    if _root(arg) in names and key in reads:
                        return reads[key]
        return None


def host_reading_helper_names(tree: ast.Module) -> frozenset[str]:
    """Names of the module's functions and methods that read a parameter on the host (what an
    editor's partial check must not miss when it sees only some of their bodies)."""
    index = HelperIndex(tree)
    return frozenset(name for table in (index.functions, index.methods)
                     for name, helpers in table.items()
                     if any(index.parameter_reads(h) for h in helpers))


def argument_keys(call: ast.Call) -> Iterator[tuple[int | str, ast.expr]]:
    """(key, argument) for each argument of a call, keyed as `Helper.parameter_keys` keys the
    parameter it fills; a keyword the helper does not name is also offered to `**kwargs`."""
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return  # the positions after it are unknown
        yield index, arg
    for keyword in call.keywords:
        if keyword.arg is not None:
            yield keyword.arg, keyword.value
            yield "**", keyword.value


def reads_for_call(index: HelperIndex, call: ast.Call, helper: Helper
                   ) -> Iterator[tuple[ast.expr, HostRead]]:
    """(argument, where it is read) for each argument of `call` that `helper` reads on the host.
    A keyword that names a parameter goes to that parameter, not to `**kwargs`."""
    reads = index.parameter_reads(helper)
    named = {n for n, keys in helper.parameter_keys().items() if "**" not in keys}
    for key, arg in argument_keys(call):
        if key == "**" and any(k.value is arg and k.arg in named for k in call.keywords):
            continue
        if key in reads:
            yield arg, reads[key]


def _aliases(fn: ast.FunctionDef, name: str) -> set[str]:
    """`name` and the loop variables that take values from it (`for v in name`, `for k, v in
    name.items()`, `for v in name.values()`)."""
    names = {name}
    for node in _own_nodes(fn.body):
        if not isinstance(node, (ast.For, ast.comprehension)):
            continue
        source = node.iter
        method = None
        if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute):
            method = source.func.attr
            source = source.func.value
        if not (isinstance(source, ast.Name) and source.id == name):
            continue
        target = node.target
        if method == "items" and isinstance(target, ast.Tuple) and len(target.elts) == 2:
            target = target.elts[1]
        elif method not in (None, "values"):
            continue
        if isinstance(target, ast.Name):
            names.add(target.id)
    return names


def _direct_read(call: ast.Call, names: set[str]) -> str | None:
    """How `call` reads one of `names` on the host (`.item()`, `float()`), or None."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in _METHOD_READS and not call.args:
        return _METHOD_READS[func.attr] if _root(func.value) in names else None
    if isinstance(func, ast.Name) and func.id in _CONVERSIONS and len(call.args) == 1:
        return f"`{func.id}()`" if _root(call.args[0]) in names else None
    return None


def _root(node: ast.AST) -> str | None:
    """`v` for `v`, `v.detach()`, `v.float().mean()`: the name a value-preserving chain starts
    from (not a subscript or another attribute: `v.shape[0]` is no tensor)."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in _SAME_PLACE and not node.args:
        node = node.func.value
    return node.id if isinstance(node, ast.Name) else None


def _own_nodes(stmts: list[ast.stmt], every_call: bool = False) -> Iterator[ast.AST]:
    """Every node under `stmts` in source order, not inside nested functions or classes. With
    `every_call`, only what runs on every call: not the body of a periodic or rare guard (`if
    step % 100 == 0:`, `if self.debug:`), nor an `except` handler, as in the step itself."""
    stack: list[ast.AST] = list(reversed(stmts))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if every_call and isinstance(node, ast.If):
            runs_every_call = guard_kind(node.test, node.body) not in ("periodic", "rare")
            stack.extend(reversed([node.test, *(node.body if runs_every_call else []),
                                   *node.orelse]))
            continue
        if every_call and isinstance(node, ast.ExceptHandler):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
