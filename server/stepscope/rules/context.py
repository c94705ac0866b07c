"""What the rules know about one parsed module, computed once per check.

`ModuleContext.build(tree, text)` walks the tree a single time and records, for every call and
every `if`, where it sits (a `Scope`: the enclosing function, the enclosing loops of that function,
innermost last, and whether a periodic guard such as `if step % N == 0` separates it from the
innermost step loop), plus indexes the rules share: torch profiler `with` statements, assignments,
bindings by line, loop nodes, imports, and per-function facts (tensor-valued names, calls,
subtractions). Rules are pure functions of this context; none of them walks the whole tree again.

Columns: `ast` reports UTF-8 byte offsets; `span()` converts them to str offsets so every
coordinate leaving this package is in code points.
"""

from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from ..source.loops import (
    MODEL,
    Loop,
    call_signal,
    find_loops,
    iter_own_nodes,
    terminal_name,
)

Span = tuple[int, int, int, int]
LoopNode = ast.For | ast.AsyncFor | ast.While
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Module

_LOSS_NAME = re.compile(r"(loss|criterion|objective)", re.IGNORECASE)
_NOT_TENSOR_TORCH = re.compile(
    r"^torch\.(cuda|backends|distributed|device|no_grad|enable_grad|inference_mode|manual_seed"
    r"|set_|get_|is_|profiler|autograd\.profiler|utils|jit|compile|save|load|hub|Generator"
    r"|Size|dtype|finfo|iinfo|nn\.(?!functional)|optim|amp|autocast|cpu|mps|xpu|accelerator"
    r"|random|use_deterministic|compiler|_)"
)
_SCALAR_METHODS = frozenset({
    "item", "tolist", "numpy", "size", "dim", "numel", "nelement", "element_size", "ndimension",
    "is_contiguous", "data_ptr", "get_device", "stride", "storage_offset", "__len__",
})


_NEWLINE = re.compile(r"\r\n|\r|\n")


_ODD_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def splits_like_tokenizer(text: str) -> bool:
    """True when `str.splitlines` splits `text` where Python's tokenizer does (it also splits at
    form feeds and Unicode line separators; the tokenizer does not)."""
    if text.isascii():
        return not any(ch in text for ch in "\x0b\x0c\x1c\x1d\x1e")
    return _ODD_BREAKS.search(text) is None


def source_lines(text: str) -> list[str]:
    """Split `text` into lines exactly where Python's tokenizer does (not at form feeds or
    Unicode line separators, which `str.splitlines` also splits on), so `ast` line numbers index
    this list."""
    if splits_like_tokenizer(text):
        return text.splitlines()
    lines = _NEWLINE.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


@dataclass
class Scope:
    """Where a node sits. `loops` holds the enclosing loops of the same function, innermost last."""

    function: FunctionNode
    loops: tuple[Loop, ...]
    periodic: bool  # under `if ... % N ...` inside the innermost step loop

    @property
    def step_loop(self) -> Loop | None:
        """The innermost enclosing loop that is a step loop, if any."""
        for loop in reversed(self.loops):
            if loop.is_step:
                return loop
        return None


@dataclass
class FunctionFacts:
    """Per-function facts: which names hold tensors, which hold wall-clock readings."""

    node: FunctionNode
    tensor_names: set[str] = field(default_factory=set)
    calls: list[ast.Call] = field(default_factory=list)  # own calls (no nested defs)
    assigns: list[ast.Assign | ast.AugAssign | ast.AnnAssign] = field(default_factory=list)
    subtractions: list[ast.BinOp] = field(default_factory=list)


@dataclass(frozen=True)
class ModuleSummary:
    """Module-wide facts a rule may read about code outside the node it reports on.

    A context built with a summary takes these from it instead of from its own tree, so a tree
    that holds only part of a module (one re-parsed block among stand-ins for the others) gives
    that part exactly the answers the whole module would.
    """

    imports: dict[str, str]
    profiler_names: frozenset[str]
    assigned: dict[str, list[ast.expr]]
    constant_names: dict[str, bool]
    moves_to_cuda: bool


@dataclass
class ModuleContext:
    tree: ast.Module
    lines: list[str]
    loops: list[Loop]
    loop_by_pos: dict[tuple[int, int], Loop]
    calls: list[tuple[ast.Call, Scope]]
    ifs: list[tuple[ast.If | ast.While | ast.IfExp, Scope]]
    profile_withs: list[tuple[ast.With | ast.AsyncWith, ast.Call, Scope]]
    functions: dict[int, FunctionFacts]  # id(function node) -> facts
    imports: dict[str, str]  # local name -> dotted origin ("time.time", "torch.profiler.profile")
    mentions_cuda: bool
    model_names: frozenset[str]
    text: str = ""
    loop_nodes: list[LoopNode] = field(default_factory=list)
    assigns: list[ast.Assign | ast.AugAssign | ast.AnnAssign] = field(default_factory=list)
    stores: list[tuple[int, str]] = field(default_factory=list)  # (line, name) of every binding
    functions_defs: list[ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=list)
    _assigned: dict[str, list[ast.expr]] | None = None
    summary: ModuleSummary | None = None

    def calls_between(self, first_line: int, last_line: int) -> list[tuple[ast.Call, "Scope"]]:
        """The calls that start on lines first_line..last_line (inclusive), in line order."""
        index = getattr(self, "_call_index", None)
        if index is None:
            ordered = sorted(self.calls, key=lambda item: item[0].lineno)
            index = ([c.lineno for c, _ in ordered], ordered)
            self._call_index = index  # type: ignore[attr-defined]
        lines, ordered = index
        lo = bisect.bisect_left(lines, first_line)
        hi = bisect.bisect_right(lines, last_line)
        return ordered[lo:hi]

    def assigned_values(self) -> dict[str, list[ast.expr]]:
        """name -> every value assigned to it with `name = value`, anywhere in the module."""
        if self._assigned is None:
            out: dict[str, list[ast.expr]] = {}
            for node in self.assigns:
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            out.setdefault(target.id, []).append(node.value)
            self._assigned = out
        return self._assigned

    # ---- coordinates -------------------------------------------------------------------------
    def col(self, line: int, byte_col: int) -> int:
        """Convert an `ast` byte offset on 1-based `line` to a str offset."""
        if 1 <= line <= len(self.lines):
            text = self.lines[line - 1]
            if not text.isascii():
                return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))
        return byte_col

    def span(self, node: ast.AST, end: ast.AST | None = None) -> Span:
        last = end or node
        line = node.lineno  # type: ignore[attr-defined]
        end_line = last.end_lineno or line  # type: ignore[attr-defined]
        return (line, self.col(line, node.col_offset),  # type: ignore[attr-defined]
                end_line, self.col(end_line, last.end_col_offset or 0))  # type: ignore[attr-defined]

    def header_span(self, stmt: ast.stmt, expr: ast.AST) -> Span:
        """From the statement start to the end of `expr` if on the same line, else end of line."""
        line = stmt.lineno
        if expr.end_lineno == line:
            return (line, self.col(line, stmt.col_offset), line,
                    self.col(line, expr.end_col_offset or 0))
        text = self.lines[line - 1] if line <= len(self.lines) else ""
        return (line, self.col(line, stmt.col_offset), line, len(text.rstrip()))

    def source_of(self, node: ast.AST) -> str:
        """The source text of `node` (offsets in `ast` are UTF-8 bytes)."""
        line, end_line = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        if not (1 <= line <= end_line <= len(self.lines)):
            return ""
        chunk = [text.encode("utf-8") for text in self.lines[line - 1:end_line]]
        end_col = node.end_col_offset or 0  # type: ignore[attr-defined]
        if len(chunk) == 1:
            return chunk[0][node.col_offset:end_col].decode("utf-8", "replace")  # type: ignore[attr-defined]
        chunk[0] = chunk[0][node.col_offset:]  # type: ignore[attr-defined]
        chunk[-1] = chunk[-1][:end_col]
        return b"\n".join(chunk).decode("utf-8", "replace")

    # ---- names -------------------------------------------------------------------------------
    def dotted(self, node: ast.AST) -> str | None:
        """`torch.cuda.synchronize` for that attribute chain, resolving import aliases."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        parts.append(self.imports.get(node.id, node.id))
        return ".".join(reversed(parts))

    def is_tensor_expr(self, node: ast.AST, facts: FunctionFacts) -> bool:
        return is_tensor_expr(node, facts.tensor_names, self)

    def facts_for(self, scope: Scope) -> FunctionFacts:
        return self.functions[id(scope.function)]

    def is_torch_profile_call(self, call: ast.Call) -> str | None:
        """"torch.profiler" / "autograd" for a profiler constructor call, else None."""
        name = self.dotted(call.func)
        if not name or not name.startswith("torch.") or not name.endswith(".profile"):
            return None
        if "autograd" in name:
            return "autograd"
        if name.endswith("profiler.profile"):
            return "torch.profiler"
        return None

    # ---- building ----------------------------------------------------------------------------
    @classmethod
    def build(cls, tree: ast.Module, text: str, model_names: Iterable[str] = (),
              summary: ModuleSummary | None = None) -> "ModuleContext":
        models = frozenset(model_names)
        loops = find_loops(tree, model_names=models,
                           profiler_names=summary.profiler_names if summary else None)
        ctx = cls(
            tree=tree,
            lines=source_lines(text),
            loops=loops,
            loop_by_pos={(lp.line, lp.col): lp for lp in loops},
            calls=[],
            ifs=[],
            profile_withs=[],
            functions={},
            imports=dict(summary.imports) if summary else {},
            mentions_cuda="cuda" in text,
            model_names=models,
            text=text,
            summary=summary,
        )
        if summary is not None:
            ctx._assigned = summary.assigned
        _Walker(ctx).run()
        for facts in ctx.functions.values():
            _infer_tensor_names(facts, ctx)
        return ctx


def _add_import(names: dict[str, str], node: ast.Import | ast.ImportFrom) -> None:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                names[alias.asname] = alias.name
    elif node.module and node.level == 0:
        for alias in node.names:
            names[alias.asname or alias.name] = f"{node.module}.{alias.name}"


def _is_periodic_test(test: ast.expr) -> bool:
    for node in ast.walk(test):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            return True
        if isinstance(node, ast.Call):
            name = terminal_name(node.func) or ""
            if re.search(r"(should|every|is_log|log_step|is_print|should_log)", name):
                return True
    return False


class _Walker:
    """One pass over the tree that fills the context's indexes (calls, ifs, assignments, loops,
    bindings, imports, `with` items). Profiler `with` statements are picked out after the pass,
    once every import is known."""

    def __init__(self, ctx: ModuleContext):
        self.ctx = ctx
        self.withs: list[tuple[ast.With | ast.AsyncWith, ast.Call, Scope]] = []

    def run(self) -> None:
        ctx = self.ctx
        module = ctx.tree
        ctx.functions[id(module)] = FunctionFacts(module)
        self.visit_block(module.body, Scope(module, (), False))
        ctx.profile_withs = [(w, c, s) for w, c, s in self.withs if ctx.is_torch_profile_call(c)]
        ctx.stores.sort()

    def visit_block(self, stmts: list[ast.stmt], scope: Scope) -> None:
        for stmt in stmts:
            self.visit(stmt, scope)

    def visit(self, node: ast.AST, scope: Scope) -> None:
        if isinstance(node, ast.expr):
            self.scan(node, scope)
            return
        ctx = self.ctx
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            ctx.assigns.append(node)
            ctx.functions[id(scope.function)].assigns.append(node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if ctx.summary is None:
                _add_import(ctx.imports, node)
            return
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            ctx.stores.append((node.lineno, node.name))
            ctx.functions_defs.append(node)
            for deco in node.decorator_list:
                self.scan(deco, scope)
            for default in node.args.defaults + [d for d in node.args.kw_defaults if d]:
                self.scan(default, scope)
            ctx.functions[id(node)] = FunctionFacts(node)
            self.visit_block(node.body, Scope(node, (), False))
            return
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            ctx.loop_nodes.append(node)
            loop = ctx.loop_by_pos.get((node.lineno, node.col_offset))
            if isinstance(node, ast.While):
                ctx.ifs.append((node, scope))
                self.scan(node.test, scope)
            else:
                self.scan(node.target, scope)
                self.scan(node.iter, scope)
            inner = scope
            if loop is not None:
                inner = Scope(scope.function, scope.loops + (loop,),
                              False if loop.is_step else scope.periodic)
            self.visit_block(node.body, inner)
            self.visit_block(node.orelse, scope)
            return
        elif isinstance(node, ast.If):
            ctx.ifs.append((node, scope))
            self.scan(node.test, scope)
            guarded = scope
            if not scope.periodic and _is_periodic_test(node.test):
                guarded = Scope(scope.function, scope.loops, True)
            self.visit_block(node.body, guarded)
            self.visit_block(node.orelse, scope)
            return
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                self.scan(item.context_expr, scope)
                if item.optional_vars is not None:
                    self.scan(item.optional_vars, scope)
                if isinstance(item.context_expr, ast.Call):
                    self.withs.append((node, item.context_expr, scope))
            self.visit_block(node.body, scope)
            return
        elif isinstance(node, ast.ClassDef):
            for expr in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
                self.scan(expr, scope)
            self.visit_block(node.body, scope)
            return
        for child in reversed(_children(node)):
            self.visit(child, scope)

    def scan(self, root: ast.expr, scope: Scope) -> None:
        """Record the calls, bindings and subtractions of one expression, iteratively (the hot
        path: most nodes of a module are expressions)."""
        ctx = self.ctx
        facts = ctx.functions[id(scope.function)]
        stack: list[ast.AST] = [root]
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is ast.Name:
                if not isinstance(node.ctx, ast.Load):  # type: ignore[attr-defined]
                    ctx.stores.append((node.lineno, node.id))  # type: ignore[attr-defined]
                continue
            if kind is ast.Constant:
                continue
            if kind is ast.Call:
                ctx.calls.append((node, scope))  # type: ignore[arg-type]
                facts.calls.append(node)  # type: ignore[arg-type]
            elif kind is ast.BinOp:
                if type(node.op) is ast.Sub:  # type: ignore[attr-defined]
                    facts.subtractions.append(node)  # type: ignore[arg-type]
            elif kind is ast.Lambda:
                # A lambda runs later, elsewhere: its calls are not part of the enclosing loop.
                self.scan(node.body, Scope(scope.function, (), False))  # type: ignore[attr-defined]
                continue
            elif kind is ast.IfExp:
                ctx.ifs.append((node, scope))  # type: ignore[arg-type]
                self.scan(node.test, scope)  # type: ignore[attr-defined]
                guarded = scope
                if not scope.periodic and _is_periodic_test(node.test):  # type: ignore[attr-defined]
                    guarded = Scope(scope.function, scope.loops, True)
                self.scan(node.body, guarded)  # type: ignore[attr-defined]
                self.scan(node.orelse, scope)  # type: ignore[attr-defined]
                continue
            stack.extend(_children(node))  # reversed children: popped in source order


_FIELDS: dict[type, tuple[str, ...]] = {}


def _children(node: ast.AST) -> list[ast.AST]:
    """Direct child nodes, in reverse field order (for a stack), without generator overhead."""
    fields = _FIELDS.get(type(node))
    if fields is None:
        fields = _FIELDS[type(node)] = tuple(f for f in node._fields if f != "ctx")
    out: list[ast.AST] = []
    for name in reversed(fields):
        value = getattr(node, name, None)
        if isinstance(value, list):
            out.extend(v for v in reversed(value) if isinstance(v, ast.AST))
        elif isinstance(value, ast.AST):
            out.append(value)
    return out


# ---- tensor names ------------------------------------------------------------------------------
def is_tensor_expr(node: ast.AST, tensor_names: set[str], ctx: ModuleContext,
                   depth: int = 0) -> bool:
    """True when `node` evaluates to a tensor as far as a reader can tell from the source.

    Looks at most 40 levels deep, so a generated 5,000-term sum cannot exhaust the stack."""
    if depth > 40:
        return False
    depth += 1
    if isinstance(node, ast.Name):
        return node.id in tensor_names
    if isinstance(node, ast.Subscript):
        return is_tensor_expr(node.value, tensor_names, ctx, depth)
    if isinstance(node, ast.BinOp):
        return (is_tensor_expr(node.left, tensor_names, ctx, depth)
                or is_tensor_expr(node.right, tensor_names, ctx, depth))
    if isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
        return is_tensor_expr(node.operand, tensor_names, ctx, depth)
    if isinstance(node, ast.Compare):
        return any(not isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops) \
            and any(is_tensor_expr(x, tensor_names, ctx, depth) for x in [node.left, *node.comparators])
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr in _SCALAR_METHODS:
                return False
            if is_tensor_expr(func.value, tensor_names, ctx, depth):
                return True
        dotted = ctx.dotted(func) or ""
        if (dotted.startswith("torch.") and not _NOT_TENSOR_TORCH.match(dotted)) \
                or dotted.startswith("torch.nn.functional.") or dotted.startswith("F."):
            return True
        if call_signal(node, model_names=ctx.model_names) == MODEL:
            return True
        name = terminal_name(func) or ""
        if _LOSS_NAME.search(name) and not name.startswith(("get_", "build_", "make_")):
            return True
    return False


def _assigned_names(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from _assigned_names(elt)
    elif isinstance(target, ast.Starred):
        yield from _assigned_names(target.value)


def _infer_tensor_names(facts: FunctionFacts, ctx: ModuleContext) -> None:
    names = facts.tensor_names
    for call in facts.calls:  # names something calls .backward() on are tensors
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "backward" \
                and isinstance(func.value, ast.Name):
            names.add(func.value.id)
    if not facts.assigns:
        return
    for _ in range(2):  # two passes settle chains like `logits = model(x); loss = f(logits)`
        for node in facts.assigns:
            if isinstance(node, ast.Assign):
                if is_tensor_expr(node.value, names, ctx):
                    for target in node.targets:
                        if isinstance(target, ast.Name) or (
                                isinstance(node.value, ast.Call)
                                and call_signal(node.value, model_names=ctx.model_names) == MODEL):
                            names.update(_assigned_names(target))
            elif node.value is not None and isinstance(node.target, ast.Name):
                if is_tensor_expr(node.value, names, ctx):
                    names.add(node.target.id)


def iter_own_nodes_all(stmts: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node under `stmts` including nested loops, not nested functions or classes."""
    stack: list[ast.AST] = list(stmts)[::-1]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


__all__ = ["ModuleContext", "ModuleSummary", "Scope", "FunctionFacts", "Span", "is_tensor_expr", "source_lines",
           "iter_own_nodes", "iter_own_nodes_all"]
