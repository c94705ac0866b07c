"""Find the loops of a Python source file and tell which one is the training/inference step.

Pure `ast`, standard library only: this module is imported by the agent inside the user's
interpreter (Python >= 3.10) as well as by the language server and `stepscope check`.

Invariants:
- `find_loops` returns every `for`/`async for`/`while` statement of the module, sorted by header
  position; lines are 1-based, columns 0-based (str offsets, as `ast` reports on a str source).
- `Loop.is_step` is decided from the loop's *own* body (statements not inside a nested loop,
  function or class): a loop that calls backward, an optimizer step or a profiler step is a step;
  a loop that only calls a model is a step when no loop nested in it is one (an epoch loop that
  also runs a validation batch is not the step; the batch loop inside it is).
- `choose_step` either returns one loop or raises `AmbiguousStep` / `NoStepFound`; it never
  guesses between equally good candidates.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Literal

__all__ = [
    "Loop",
    "SourceSyntaxError",
    "AmbiguousStep",
    "NoStepFound",
    "parse",
    "find_loops",
    "choose_step",
    "choose_among",
    "loop_at",
    "step_signals",
    "call_signal",
    "is_model_name",
    "is_range_like",
    "iter_own_nodes",
    "profiler_names_of",
    "iter_statements",
    "terminal_name",
]

# Reasons a loop looks like a step. The first three are "strong": they only happen in a step.
BACKWARD = "calls backward"
OPTIMIZER = "steps an optimizer"
PROFILER = "advances a profiler schedule"
MODEL = "calls a model"
STEP_FUNCTION = "calls a step function"
STRONG = frozenset({BACKWARD, OPTIMIZER, PROFILER})

_MODEL_NAME = re.compile(
    r"^(model|models|net|network|module|policy|actor|critic|generator|discriminator|unet"
    r"|backbone|teacher|student|classifier|detector|ddp_model|model_engine|model_ema"
    r"|[a-z0-9]+_model|[a-z0-9]+_net|[a-z0-9]+_network)$",
    re.IGNORECASE,
)
# Names that contain "model" but build or manage one rather than run it.
_NOT_A_MODEL_CALL = re.compile(
    r"^(build|make|create|get|load|init|save|setup|prepare|wrap|copy|register|update|compile)_"
    r"|_(fn|func|version|name|path|config|cfg|type|class|cls|id|size|dir|file|kwargs|args)$",
    re.IGNORECASE,
)
_MODEL_METHODS = frozenset({"forward", "generate"})
_OPTIMIZER_NAME = re.compile(r"(optim|^opt(_|\d|$)|_opt(\d|$)|solver)", re.IGNORECASE)
_PROFILER_NAME = re.compile(r"prof", re.IGNORECASE)
_STEP_FUNCTION = re.compile(
    r"^(train|training|eval|evaluation|val|validation|test|inference|predict|forward|optim"
    r"|update)_(step|batch)$|^(step_fn|train_fn|forward_backward|forward_backward_step"
    r"|run_step|do_step|training_step|one_step)$",
    re.IGNORECASE,
)
_RANGE_LIKE = frozenset({"range", "trange", "count", "repeat", "arange", "linspace"})
_WRAPPERS = frozenset({"enumerate", "tqdm", "zip", "iter", "islice", "progress_bar", "track"})


class SourceSyntaxError(ValueError):
    """The source does not parse. `str(e)` is a one-line reason with the line number."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class Loop:
    """One `for`/`while` statement. Lines are 1-based, `col` 0-based."""

    line: int
    end_line: int
    col: int
    kind: Literal["for", "while"]
    is_step: bool
    reasons: tuple[str, ...]
    body_lines: tuple[int, ...]
    header_fetch: bool
    header_end_line: int = 0
    function: str | None = None  # qualified name of the enclosing function, None at module level
    parent_line: int | None = None  # header line of the enclosing loop in the same function
    depth: int = 0  # number of enclosing loops in the same function
    contains: tuple[str, ...] = field(default=())  # reasons found anywhere inside, nested loops too

    def contains_line(self, line: int) -> bool:
        return self.line <= line <= self.end_line


class NoStepFound(LookupError):
    """No loop in the source looks like a training or inference step."""

    def __init__(self, message: str = "no loop looks like a training or inference step"):
        super().__init__(message)


class AmbiguousStep(LookupError):
    """Several loops look equally like the step; `candidates` lists them in source order."""

    def __init__(self, candidates: list[Loop]):
        self.candidates = list(candidates)
        lines = ", ".join(str(c.line) for c in self.candidates)
        super().__init__(f"several loops look like the step (lines {lines}); choose one with --line")


def parse(source: str | bytes | ast.Module, filename: str = "<source>") -> ast.Module:
    """Parse `source`; raise `SourceSyntaxError` with a one-line reason when it does not parse."""
    if isinstance(source, ast.Module):
        return source
    try:
        return ast.parse(source, filename=filename)
    except SyntaxError as e:
        where = f"line {e.lineno}: " if e.lineno else ""
        raise SourceSyntaxError(f"{where}{e.msg}", e.lineno) from None
    except (ValueError, UnicodeDecodeError) as e:  # null bytes, undecodable bytes
        raise SourceSyntaxError(str(e).splitlines()[0] if str(e) else type(e).__name__) from None


def terminal_name(node: ast.expr) -> str | None:
    """The last identifier of a callee or receiver: `self.model` -> "model", `f(x)` -> "f"."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return terminal_name(node.func)
    if isinstance(node, ast.Subscript):
        return terminal_name(node.value)
    return None


def call_signal(call: ast.Call, profiler_names: frozenset[str] = frozenset(),
                model_names: frozenset[str] = frozenset(), step_names: frozenset[str] = frozenset()) -> str | None:
    """The step reason a single call gives, if any (`step_names`: more callee names that run a step,
    such as the file's own step functions)."""
    func = call.func
    if isinstance(func, ast.Attribute):
        attr = func.attr
        receiver = terminal_name(func.value)
        if attr in ("backward", "manual_backward"):  # Lightning's manual optimisation: self.manual_backward(loss)
            return BACKWARD
        if attr == "step":
            if receiver is None:
                return None
            if receiver in profiler_names or _PROFILER_NAME.search(receiver):
                return PROFILER
            if _OPTIMIZER_NAME.search(receiver):
                return OPTIMIZER
            if "scaler" in receiver.lower() and call.args:
                return OPTIMIZER  # GradScaler.step(optimizer)
            return None
        if attr == "zero_grad" and receiver is not None and _OPTIMIZER_NAME.search(receiver):
            return OPTIMIZER
        if attr in _MODEL_METHODS and receiver is not None and is_model_name(receiver, model_names):
            return MODEL
    name = terminal_name(func)
    if name is None:
        return None
    if is_model_name(name, model_names):
        return MODEL
    if name in step_names or _STEP_FUNCTION.match(name):
        return STEP_FUNCTION
    return None


def is_model_name(name: str, model_names: frozenset[str] = frozenset()) -> bool:
    """True when calling something named `name` runs a model (`model`, `self.net`, `unet`)."""
    if name in model_names:
        return True
    if name[:1].isupper():
        return False  # `Net(10)` builds a model; it does not run one
    return bool(_MODEL_NAME.match(name)) and not _NOT_A_MODEL_CALL.match(name)


def iter_statements(stmts: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement under `stmts`, nested blocks included, without visiting expressions."""
    stack: list[ast.stmt] = list(stmts)[::-1]
    while stack:
        stmt = stack.pop()
        yield stmt
        children: list[ast.stmt] = []
        for name in ("body", "orelse", "finalbody"):
            block = getattr(stmt, name, None)
            if isinstance(block, list):
                children.extend(block)
        for handler in getattr(stmt, "handlers", ()) or ():
            children.extend(handler.body)
        for case in getattr(stmt, "cases", ()) or ():
            children.extend(case.body)
        stack.extend(reversed(children))


def profiler_names_of(stmts: Iterable[ast.stmt]) -> frozenset[str]:
    """Names bound to a profiler in `stmts`: `with profile(...) as prof`,
    `prof = torch.profiler.profile(...)`."""
    names: set[str] = set()
    for node in iter_statements(stmts):
        _add_profiler_names(node, names)
    return frozenset(names)


def _add_profiler_names(node: ast.AST, names: set[str]) -> None:
    """The names statement `node` binds to a profiler (see `profiler_names_of`), into `names`."""
    if isinstance(node, (ast.With, ast.AsyncWith)):
        for item in node.items:
            if (isinstance(item.context_expr, ast.Call)
                    and terminal_name(item.context_expr.func) == "profile"
                    and isinstance(item.optional_vars, ast.Name)):
                names.add(item.optional_vars.id)
    elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
        if terminal_name(node.value.func) == "profile":
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))


_FIELDS: dict[type, tuple[str, ...]] = {}
_BOUNDARIES = (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef,
               ast.ClassDef, ast.Lambda)


def iter_own_nodes(stmts: Iterable[ast.stmt]) -> Iterator[ast.AST]:
    """Every node under `stmts`, not descending into nested loops, functions, classes or lambdas
    (the nested node itself is yielded)."""
    stack: list[ast.AST] = list(stmts)[::-1]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _BOUNDARIES):
            continue  # a nested loop is a loop of its own; a def runs elsewhere
        kind = type(node)
        fields = _FIELDS.get(kind)
        if fields is None:
            fields = _FIELDS[kind] = tuple(f for f in node._fields if f != "ctx")
        for name in reversed(fields):
            value = getattr(node, name, None)
            if isinstance(value, list):
                stack.extend(v for v in reversed(value) if isinstance(v, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append(value)


# Node types with no child node `iter_own_calls` needs to look into.
_LEAVES = frozenset({ast.Name, ast.Constant, ast.Pass, ast.Break, ast.Continue, ast.Global,
                     ast.Nonlocal, ast.Import, ast.ImportFrom})
_BOUNDARY_TYPES = frozenset(_BOUNDARIES)
_CALL_FIELDS: dict[type, tuple[str, ...]] = {}  # child fields, last first


def iter_own_calls(stmts: Iterable[ast.stmt]) -> Iterator[ast.Call]:
    """The calls `iter_own_nodes` yields, in the same order, without handing every other node
    back to the caller (the hot path of `find_loops`)."""
    stack: list[ast.AST] = list(stmts)[::-1]
    pop, push, extend = stack.pop, stack.append, stack.extend
    fields_of, leaves, boundaries = _CALL_FIELDS, _LEAVES, _BOUNDARY_TYPES
    call_type, ast_type = ast.Call, ast.AST
    attribute_type, binop_type = ast.Attribute, ast.BinOp
    while stack:
        node = pop()
        kind = type(node)
        if kind is attribute_type:  # the common nodes, taken apart here
            push(node.value)  # type: ignore[attr-defined]
            continue
        if kind is call_type:
            yield node  # type: ignore[misc]
            keywords = node.keywords  # type: ignore[attr-defined]
            if keywords:
                extend([k.value for k in reversed(keywords)])
            args = node.args  # type: ignore[attr-defined]
            if args:
                extend(args[::-1])
            push(node.func)  # type: ignore[attr-defined]
            continue
        if kind is binop_type:
            push(node.right)  # type: ignore[attr-defined]
            push(node.left)  # type: ignore[attr-defined]
            continue
        if kind in leaves or kind in boundaries:
            continue
        fields = fields_of.get(kind)
        if fields is None:  # operators (`op`, `ops`) and `ctx` hold no call
            fields = fields_of[kind] = tuple(
                f for f in reversed(kind._fields) if f not in ("ctx", "op", "ops"))
        for name in fields:
            value = getattr(node, name, None)
            if value.__class__ is list:
                extend([v for v in reversed(value) if isinstance(v, ast_type)])
            elif isinstance(value, ast_type):
                push(value)


def step_signals(stmts: Iterable[ast.stmt], profiler_names: frozenset[str] = frozenset(),
                 model_names: frozenset[str] = frozenset(), step_names: frozenset[str] = frozenset()
                 ) -> tuple[str, ...]:
    """The step reasons found in `stmts` (own statements only), in a fixed order."""
    found: set[str] = set()
    for node in iter_own_calls(stmts):
        signal = call_signal(node, profiler_names, model_names, step_names)
        if signal:
            found.add(signal)
    order = (BACKWARD, OPTIMIZER, PROFILER, MODEL, STEP_FUNCTION)
    return tuple(r for r in order if r in found)


def is_range_like(iterable: ast.expr) -> bool:
    """True when iterating `iterable` cannot be a batch read (a range, a literal, a counter)."""
    node = iterable
    while isinstance(node, ast.Call) and terminal_name(node.func) in _WRAPPERS and node.args:
        if terminal_name(node.func) == "zip":
            return all(is_range_like(a) for a in node.args)
        node = node.args[0]
    if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Constant, ast.ListComp, ast.Dict)):
        return True
    if isinstance(node, ast.Call):
        name = terminal_name(node.func)
        if name in _RANGE_LIKE or name in {"items", "keys", "values", "split", "sorted", "reversed"}:
            return True
    return False


def _first_header_line_end(node: ast.For | ast.AsyncFor | ast.While) -> int:
    header_part = node.test if isinstance(node, ast.While) else node.iter
    return header_part.end_lineno or node.lineno


_BLOCKS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})
_BLOCK_FIELDS: dict[type, tuple[str, ...]] = {}


@dataclass
class _Raw:
    node: ast.For | ast.AsyncFor | ast.While
    function: str | None
    parent: int | None  # index into the raw list
    depth: int
    own: tuple[str, ...]
    children: list[int] = field(default_factory=list)


def _collect(tree: ast.Module, profiler_names: frozenset[str] | None,
             model_names: frozenset[str], step_names: frozenset[str]) -> list[_Raw]:
    """The loops of `tree` with their own step reasons. Without `profiler_names`, the names
    bound to a profiler are those of `tree` (`profiler_names_of`), found in the same pass over
    its statements: the reasons are worked out once it is done."""
    raws: list[_Raw] = []
    found: set[str] = set()
    note_names = _add_profiler_names if profiler_names is None else None

    def visit(stmts: list[ast.stmt], function: str | None, prefix: str, parent: int | None,
              depth: int) -> None:
        for stmt in stmts:
            visit_node(stmt, function, prefix, parent, depth)

    def visit_node(node: ast.AST, function: str | None, prefix: str, parent: int | None,
                   depth: int) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            qual = f"{prefix}{node.name}"
            visit(node.body, qual, qual + ".", None, 0)
            return
        if isinstance(node, ast.ClassDef):
            visit(node.body, function, f"{prefix}{node.name}.", None, 0)
            return
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            index = len(raws)
            raws.append(_Raw(node, function, parent, depth, ()))
            if parent is not None:
                raws[parent].children.append(index)
            visit(node.body, function, prefix, index, depth + 1)
            visit(node.orelse, function, prefix, parent, depth)
            return
        if note_names is not None:
            note_names(node, found)
        kind = type(node)
        fields = _BLOCK_FIELDS.get(kind)
        if fields is None:
            fields = _BLOCK_FIELDS[kind] = tuple(f for f in kind._fields if f in _BLOCKS)
        for name in fields:  # statements sit only in these lists: expressions are not visited
            for child in getattr(node, name, None) or ():
                if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                    visit_node(child, function, prefix, parent, depth)

    visit(tree.body, None, "", None, 0)
    names = frozenset(found) if profiler_names is None else profiler_names
    for raw in raws:
        raw.own = step_signals(raw.node.body, names, model_names, step_names)
    return raws


def find_loops(source: str | bytes | ast.Module, *,
               model_names: Iterable[str] = (),
               profiler_names: frozenset[str] | None = None,
               step_function_names: Iterable[str] = ()) -> list[Loop]:
    """Every loop of `source`, sorted by (line, col). Raises `SourceSyntaxError` if it does not parse.

    `model_names` adds callee names that count as running a model (for unusual names).
    `profiler_names` replaces the names bound to a profiler found in `source` (for a tree that
    holds only part of a module; see `profiler_names_of`).
    `step_function_names` adds callee names that run a step (the file's own step functions:
    candidates.py), so a loop that calls one "calls a step function".
    """
    tree = parse(source)
    models = frozenset(model_names)
    raws = _collect(tree, profiler_names, models, frozenset(step_function_names))

    contains: list[set[str]] = [set(r.own) for r in raws]
    for index in range(len(raws) - 1, -1, -1):  # children come after their parent
        parent = raws[index].parent
        if parent is not None:
            contains[parent].update(contains[index])

    def subtree_has_step(index: int) -> bool:
        return any(raws[c].own or subtree_has_step(c) for c in raws[index].children)

    loops: list[Loop] = []
    for index, raw in enumerate(raws):
        node = raw.node
        own = raw.own
        strong = any(r in STRONG for r in own)
        is_step = strong or (bool(own) and not subtree_has_step(index))
        order = (BACKWARD, OPTIMIZER, PROFILER, MODEL, STEP_FUNCTION)
        kind: Literal["for", "while"] = "while" if isinstance(node, ast.While) else "for"
        header_fetch = kind == "for" and not is_range_like(node.iter)  # type: ignore[union-attr]
        parent_line = raws[raw.parent].node.lineno if raw.parent is not None else None
        loops.append(Loop(
            line=node.lineno,
            end_line=node.end_lineno or node.lineno,
            col=node.col_offset,
            kind=kind,
            is_step=is_step,
            reasons=own,
            body_lines=tuple(s.lineno for s in node.body),
            header_fetch=header_fetch,
            header_end_line=_first_header_line_end(node),
            function=raw.function,
            parent_line=parent_line,
            depth=raw.depth,
            contains=tuple(r for r in order if r in contains[index]),
        ))
    loops.sort(key=lambda lp: (lp.line, lp.col))
    return loops


def _innermost(loops: list[Loop], predicate) -> list[Loop]:
    """Loops satisfying `predicate` that have no nested loop also satisfying it."""
    chosen = [lp for lp in loops if predicate(lp)]
    return [lp for lp in chosen
            if not any(o is not lp and lp.line < o.line and o.end_line <= lp.end_line
                       and o.function == lp.function for o in chosen)]


def choose_step(source: str | bytes | ast.Module, *, model_names: Iterable[str] = ()) -> Loop:
    """The loop that is clearly the step, or raise `AmbiguousStep` / `NoStepFound`.

    Preference, strongest evidence first: the loop that advances a profiler schedule; the innermost
    loop containing both a backward and an optimizer step; the innermost loop containing either;
    the innermost loop that runs a model or a step function.
    """
    return choose_among(find_loops(source, model_names=model_names))


def choose_among(loops: list[Loop]) -> Loop:
    """`choose_step` over loops `find_loops` returned (with the tiers above)."""
    tiers = (
        lambda lp: PROFILER in lp.reasons,
        lambda lp: BACKWARD in lp.contains and OPTIMIZER in lp.contains,
        lambda lp: BACKWARD in lp.contains or OPTIMIZER in lp.contains,
        lambda lp: lp.is_step and (MODEL in lp.contains or STEP_FUNCTION in lp.contains),
    )
    for predicate in tiers:
        candidates = _innermost(loops, predicate)
        if len(candidates) == 1:
            return candidates[0]
        if len(candidates) > 1:
            raise AmbiguousStep(candidates)
    raise NoStepFound()


def loop_at(source: str | bytes | ast.Module, line: int) -> Loop | None:
    """The innermost loop whose header or body contains the 1-based `line`, or None."""
    containing = [lp for lp in find_loops(source) if lp.contains_line(line)]
    if not containing:
        return None
    return max(containing, key=lambda lp: (lp.line, lp.col))
