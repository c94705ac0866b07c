"""Rewrite a module's syntax tree so the step and the workspace code it calls report their lines.

Pure `ast` work, no torch. Every original line number is kept, so tracebacks and trace labels
point at the user's own lines; the file on disk is never touched.

What the rewrite adds (the runtime object is `__stepscope__`, a `Runtime`):
- The step loop at `step_line`:
  `for T in ITER:` → `for T in __stepscope__.iterate(ITER, "ss:<id>:<line>:next"):` (the
  iterator's `next()` is the batch read, reported on the loop's own line; each step begins just
  before it); `while` loops get `__stepscope__.step_boundary()` as their first statement; after
  the loop statement comes `__stepscope__.loop_end()` (the loop was left: once the window is
  complete, the program stops there rather than run the code after the loop).
  Each statement of its body, at any nesting depth inside compound statements, is wrapped in
  `with __stepscope__.region("ss:<id>:<stmt line>"):` — a compound statement is wrapped as a whole
  and its inner statements too. An `elif` is part of its `if` (its branch's statements get their
  own regions); the `else`, `except` and `finally` blocks' statements get theirs like any others.
- The step function `step_function` (each call is a step; a qualified name such as
  `Trainer.training_step`, or a plain name, and its def line when `step_line` is given with it):
  `__stepscope__.step_boundary()` first, then its statements wrapped as for a loop body, all of
  them inside `__stepscope__.step_call("ss:<id>:<def line>")`: the call itself (a region of the def
  line in a profile, the call's return timed in a measure), since a step runs from one call's start
  to the next and so also holds what the program does between calls (not for a generator or an
  async function, whose call can suspend). Without regions the call is still wrapped: it is the
  one thing a measure times inside a step. Inside that call, each `return X` of the function's own
  scope is `return __stepscope__.returned(X)` (a bare `return`: `returned(None)`), which gives `X`
  back unchanged and tells the call what it returned (a measure's value of the pass).
- Every other function of a workspace module: its body runs inside
  `__stepscope__.frame("ss:<id>:<def line>")` (call depth in workspace code, and which function) and
  each statement inside `__stepscope__.line("ss:...")`, which records only while the window runs and
  the call is within the configured depth of the step.
  Generator and async functions are not counted as frames (a suspended generator would hold its
  depth), but their statements are still labelled.
- torch.compile: Dynamo cannot enter Stepscope's context managers (it would break the graph there and
  run the whole function eager), so a labelled function's body is kept twice:
  `if __stepscope__.compiling(): <the original body> else: with __stepscope__.frame(...): ...`.
  `compiling` is `torch.compiler.is_compiling`, which Dynamo folds to True while it traces: the
  compiled graph is the one the program has without Stepscope (same graphs, no added graph break,
  the original line numbers in its nodes' stack traces), and eager calls keep their regions. Which
  lines compiled code came from is read afterwards from the compiler's own records (compile_log.py).
  A function that holds the step, and async functions (Dynamo does not trace them), are not split.

Invariants (what keeps the rewritten program the program it was):
- Function and class definitions, `pass`, `global` and `nonlocal` are never wrapped. Every
  `global`/`nonlocal` of a function's own scope is moved, once, to the top of its body (Python
  binds them for the whole function wherever they stand, but a use must not precede them in the
  text, and the split above writes the body twice).
- A function's docstring stays its first statement (`__doc__`, doctests and argparse helps read it).
- Nor is a statement that can suspend its function (a `yield`, an `await`, an `async for`, `async
  with` or async comprehension) wrapped: its region would stay open while the code that resumes it
  runs, and cross that code's regions; the statements inside it are still wrapped.
- CPython allows 20 statically nested blocks in a function (loops, `with`, `try`); a wrapper is
  added only where the deepest block under it still fits (`_BLOCK_LIMIT`, counted as CPython
  counts them or more), so a deeply nested statement keeps the region of the statement around it.
- A function decorated by a bytecode compiler (numba's `jit`, `njit`, `vectorize`, ...; any
  decorator whose name ends in `jit`) keeps its own code: such a compiler reads the bytecode and
  knows nothing of Stepscope's calls.
- No walk of the tree recurses into expressions, and the compiled branch shares them with the
  labelled one (only statements that hold blocks are copied), so a deep expression that Python
  compiles does not exhaust the interpreter's recursion limit here. Anything the rewrite still
  cannot compile raises `InstrumentError` (program.py then runs that module as it is, and says so).

With `regions=False` (a mode that only times the steps) the rewrite adds the step boundaries only:
`iterate` and `step_boundary` (and a step function's `step_call`), no other `with` statement.

With `step_only=True` (a module of an installed package that holds the step) only the step function,
or the function that holds the step loop, is rewritten: the package's other functions keep their
code, count no frame and label no line, so the workspace code the step calls is as deep below the
step as it is under any other library code.
"""

from __future__ import annotations

import ast
import copy
from typing import Any, ContextManager, Iterable, Iterator, Protocol

from .protocol import fetch_label, region_label

RUNTIME_NAME = "__stepscope__"


class Runtime(Protocol):
    """What the rewritten code calls as `__stepscope__` (steps.StepClock and its recorder)."""

    def iterate(self, iterable: Iterable[Any], label: str) -> Iterator[Any]: ...

    def step_boundary(self) -> None: ...

    def loop_end(self) -> None: ...

    def region(self, label: str) -> ContextManager[Any]: ...

    def step_call(self, label: str) -> ContextManager[Any]:
        """Around a step function's whole call (`label`: its def line's region)."""
        ...

    def returned(self, value: Any) -> Any:
        """A step function's `return value` inside its `step_call`: gives `value` back."""
        ...

    def frame(self, label: str) -> ContextManager[Any]: ...

    def line(self, label: str) -> ContextManager[Any]: ...

    def compiling(self) -> bool:
        """True while torch.compile traces the calling code (Dynamo folds it to a constant)."""
        ...

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SKIP = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Pass, ast.Global, ast.Nonlocal)
_DECLARATIONS = (ast.Global, ast.Nonlocal)
#: CPython's CO_MAXBLOCKS is 20; one block of margin for the function's own (3.12+ wraps a
#: generator's body in one)
_BLOCK_LIMIT = 19
#: bytecode compilers: the functions they decorate keep their code (numba, numba.cuda, ...)
_BYTECODE_COMPILERS = ("vectorize", "guvectorize", "cfunc", "stencil")


class LoopNotFound(LookupError):
    pass


class InstrumentError(Exception):
    """The rewritten module cannot be compiled here; the message says why, in one line."""


# -- small builders: every node they make has its location, so no walk of the tree is needed --
def _locate(node: ast.AST, like: ast.AST) -> ast.AST:
    for name in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
        setattr(node, name, getattr(like, name, None) if name.startswith("end_") else getattr(like, name, 0))
    return node


def _runtime_call(attr: str, args: list[ast.expr], like: ast.AST) -> ast.Call:
    name = _locate(ast.Name(id=RUNTIME_NAME, ctx=ast.Load()), like)
    func = _locate(ast.Attribute(value=name, attr=attr, ctx=ast.Load()), like)
    return _locate(ast.Call(func=func, args=args, keywords=[]), like)  # type: ignore[return-value]


def _constant(value: str, like: ast.AST) -> ast.Constant:
    return _locate(ast.Constant(value), like)  # type: ignore[return-value]


def _with(attr: str, args: list[ast.expr], body: list[ast.stmt], like: ast.stmt) -> ast.With:
    item = ast.withitem(context_expr=_runtime_call(attr, args, like), optional_vars=None)
    return _locate(ast.With(items=[item], body=body), like)  # type: ignore[return-value]


def _expr_stmt(call: ast.Call, like: ast.AST) -> ast.Expr:
    return _locate(ast.Expr(call), like)  # type: ignore[return-value]


# -- what the tree holds -------------------------------------------------------------------------
def _own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """`node` and everything inside it but nested functions, lambdas and classes (they run
    elsewhere); iterative, so a deep expression costs no recursion."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for child in ast.iter_child_nodes(current):
            if not isinstance(child, (*_FUNCTIONS, ast.Lambda, ast.ClassDef)):
                stack.append(child)


def _is_generator(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for stmt in fn.body for n in _own_nodes(stmt))


def _own_suspension(stmt: ast.stmt) -> tuple[bool, list[ast.stmt]]:
    """Whether `stmt` itself (its expressions, not the statements inside it) can suspend, and the
    statements directly inside it (nested functions, lambdas and classes run elsewhere)."""
    if isinstance(stmt, (ast.AsyncFor, ast.AsyncWith)):
        return True, []
    inner: list[ast.stmt] = []
    stack = list(ast.iter_child_nodes(stmt))
    while stack:
        node = stack.pop()
        if isinstance(node, (*_FUNCTIONS, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.stmt):
            inner.append(node)
            continue
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)) or (isinstance(node, ast.comprehension)
                                                                         and node.is_async):
            return True, []
        stack.extend(ast.iter_child_nodes(node))
    return False, inner


def _suspends(stmt: ast.stmt, memo: dict[int, tuple[ast.stmt, bool]]) -> bool:
    """Whether running `stmt` can suspend its function (a yield, an await, an async for or with,
    an async comprehension). Each statement is looked at once per module (`memo`), without
    recursion (an elif chain nests hundreds deep)."""
    order: list[tuple[ast.stmt, bool, list[ast.stmt]]] = []
    stack = [stmt]
    while stack:
        node = stack.pop()
        if id(node) in memo and memo[id(node)][0] is node:
            continue
        own, inner = _own_suspension(node)
        order.append((node, own, inner))
        stack.extend(inner)
    for node, own, inner in reversed(order):  # the statements inside before the one holding them
        memo[id(node)] = (node, own or any(memo[id(s)][1] for s in inner))  # the node kept alive: ids stay its own
    return memo[id(stmt)][1]


def _is_elif(parent: ast.stmt, orelse: list[ast.stmt]) -> bool:
    """Whether `orelse` of the `if` statement `parent` is written `elif` (an `if` alone in it, at the
    parent's own column: `else:` + an indented `if` is at a deeper one)."""
    return (isinstance(parent, ast.If) and len(orelse) == 1 and isinstance(orelse[0], ast.If)
            and orelse[0].col_offset == parent.col_offset and orelse[0].lineno > parent.lineno)


def _blocks(stmt: ast.stmt, field: str) -> int:
    """How many blocks CPython counts (or more) around the statements of `stmt`'s block `field`."""
    if isinstance(stmt, _LOOPS):
        return 1
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return len(stmt.items)
    if isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
        return 3  # the try, its handler and its cleanup, or the finally's own two
    return 0


def _inner_blocks(stmt: ast.stmt) -> Iterator[tuple[Any, str, ast.stmt]]:
    """(holder, field, owner) of each statement list directly inside `stmt`: `getattr(holder,
    field)` is the list, `owner` the statement whose block it is. An elif chain's branches count as
    the `if`'s own, walked in place (a chain of hundreds costs no recursion)."""
    node: ast.stmt | None = stmt
    while node is not None:
        chained = None
        for holder, field in _block_holders(node):
            block = getattr(holder, field)
            if holder is node and field == "orelse" and _is_elif(node, block):
                chained = block[0]
                continue
            yield holder, field, node
        node = chained


def _depth_under(stmt: ast.stmt, memo: dict[int, tuple[ast.stmt, int]]) -> int:
    """The deepest block nesting inside `stmt`, its own blocks included (nested functions and
    classes are code objects of their own). Memoised per node."""
    key = id(stmt)
    if key in memo and memo[key][0] is stmt:
        return memo[key][1]
    deepest = 0
    for holder, field, owner in _inner_blocks(stmt):
        inner = max((_depth_under(s, memo) for s in getattr(holder, field)
                     if not isinstance(s, (*_FUNCTIONS, ast.ClassDef))), default=0)
        deepest = max(deepest, _blocks(owner, field) + inner)
    memo[key] = (stmt, deepest)  # the node kept alive, so its id is not another's
    return deepest


def _hoist_declarations(fn: ast.FunctionDef | ast.AsyncFunctionDef, body: list[ast.stmt]) -> list[ast.stmt]:
    """Take every `global` and `nonlocal` of the function's own scope out of `body` (a block left
    empty gets a `pass`) and return them as one statement each, for the top of the body."""
    names: dict[type, list[str]] = {ast.Global: [], ast.Nonlocal: []}

    def strip(block: list[ast.stmt]) -> list[ast.stmt]:
        kept = []
        for s in block:
            if isinstance(s, _DECLARATIONS):
                names[type(s)].extend(n for n in s.names if n not in names[type(s)])
                continue
            if not isinstance(s, (*_FUNCTIONS, ast.ClassDef)):
                for holder, field, _ in _inner_blocks(s):
                    setattr(holder, field, strip(getattr(holder, field)) or [_locate(ast.Pass(), s)])
            kept.append(s)
        return kept

    body[:] = strip(body)
    out: list[ast.stmt] = []
    for kind in (ast.Global, ast.Nonlocal):
        if names[kind]:
            out.append(_locate(kind(names=names[kind]), fn))
    return out


def _block_holders(stmt: ast.stmt) -> Iterator[tuple[Any, str]]:
    """(object, field) of each statement list directly inside `stmt`."""
    for field in ("body", "orelse", "finalbody"):
        block = getattr(stmt, field, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield stmt, field
    for handler in getattr(stmt, "handlers", ()) or ():
        yield handler, "body"
    for case in getattr(stmt, "cases", ()) or ():
        yield case, "body"


def _decorator_name(node: ast.expr) -> list[str]:
    """`numba.cuda.jit(...)` → ["numba", "cuda", "jit"]; [] for anything but a dotted name."""
    while isinstance(node, ast.Call):
        node = node.func
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    return [node.id, *parts] if isinstance(node, ast.Name) else []


def _compiled_to_bytecode(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a decorator of `fn` compiles its bytecode: a name ending in `jit` (numba's `jit`,
    `njit`, `cuda.jit`; triton's `jit`), or numba's `vectorize`, `guvectorize`, `cfunc`, `stencil`
    (bare, or from a module named numba/nb; numpy's `vectorize` calls the function as it is)."""
    for decorator in fn.decorator_list:
        name = _decorator_name(decorator)
        if not name:
            continue
        if name[-1].endswith("jit") or (name[-1] in _BYTECODE_COMPILERS and (len(name) == 1 or name[0] in ("numba", "nb"))):
            return True
    return False


def _copy_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """A copy of a block for a second branch: every statement that holds a block (and every except
    handler and match case) is a new object with its blocks copied; everything else, expressions and
    simple statements, is shared. The rewrite only ever replaces statement lists and wraps statements,
    never changes an expression or a simple statement, so the two branches cannot see each other's
    changes; and a deep expression costs nothing here."""
    out = list(body)
    stack: list[list[Any]] = [out]
    while stack:
        block = stack.pop()
        for i, node in enumerate(block):
            fields = [f for f in ("body", "orelse", "finalbody", "handlers", "cases")
                      if isinstance(getattr(node, f, None), list) and getattr(node, f)
                      and isinstance(getattr(node, f)[0], (ast.stmt, ast.excepthandler, ast.match_case))]
            if not fields:
                continue
            twin = copy.copy(node)
            for field in fields:
                items = list(getattr(node, field))
                setattr(twin, field, items)
                stack.append(items)
            block[i] = twin
    return out


def _return_through(body: list[ast.stmt]) -> None:
    """Put `return __stepscope__.returned(X)` in place of each `return X` of a function's own scope (a
    bare `return`: `returned(None)`); nested functions and classes keep theirs. A new statement takes
    the old one's place in its block: no statement is changed (a block copied for a compiled branch
    may share them)."""
    blocks = [body]
    while blocks:
        block = blocks.pop()
        for i, stmt in enumerate(block):
            if isinstance(stmt, ast.Return):
                value = stmt.value if stmt.value is not None else _locate(ast.Constant(None), stmt)
                block[i] = _locate(ast.Return(value=_runtime_call("returned", [value], stmt)), stmt)
            elif not isinstance(stmt, (*_FUNCTIONS, ast.ClassDef)):
                blocks.extend(getattr(holder, field) for holder, field, _ in _inner_blocks(stmt))


def _split_docstring(body: list[ast.stmt]) -> tuple[list[ast.stmt], list[ast.stmt]]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[:1], body[1:]
    return [], body


class _Rewriter:
    def __init__(self, file_id: str, step_line: int | None, step_function: str | None, regions: bool = True,
                 step_only: bool = False):
        self.file_id = file_id
        self.step_only = step_only
        # with a step function, `step_line` is its def line (when known), never a loop's
        self.step_line = step_line if step_function is None else None
        self.function_line = step_line if step_function is not None else None
        self.step_function = step_function.replace(".<locals>", "") if step_function else None
        self.regions = regions
        self.step_found = False
        self.scope: list[str] = []  # enclosing classes and functions: the qualified name's prefix
        self.depths: dict[int, tuple[ast.stmt, int]] = {}  # _depth_under's memo
        self.suspending: dict[int, tuple[ast.stmt, bool]] = {}  # _suspends' memo

    def is_step_function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """`fn` is the step function: its qualified name (or, for a plain name, its name) matches, and
        so does its def line when one was given."""
        if self.step_function is None or self.step_found:
            return False
        qualname = ".".join([*self.scope, fn.name])
        named = qualname == self.step_function or ("." not in self.step_function and fn.name == self.step_function)
        return named and (self.function_line is None or fn.lineno == self.function_line)

    def fits(self, depth: int, stmt: ast.stmt) -> bool:
        """Whether a wrapper around `stmt`, placed `depth` blocks deep, leaves its blocks within limit."""
        return depth + 1 + _depth_under(stmt, self.depths) <= _BLOCK_LIMIT

    # -- statements ---------------------------------------------------------------------------
    def wrap_block(self, body: list[ast.stmt], how: str, depth: int) -> list[ast.stmt]:
        """Wrap each statement of a block, `depth` blocks deep, in a `how` ("region" or "line")
        context (without regions: only look into it for the step)."""
        out: list[ast.stmt] = []
        for stmt in body:
            if isinstance(stmt, _FUNCTIONS):
                self.function(stmt)
                out.append(stmt)
                continue
            if isinstance(stmt, ast.ClassDef):
                self.class_body(stmt)
                out.append(stmt)
                continue
            if isinstance(stmt, _SKIP):
                out.append(stmt)
                continue
            if isinstance(stmt, _LOOPS) and stmt.lineno == self.step_line:
                self.step_loop(stmt, depth)
                out.append(stmt)  # the loop statement itself is not a line of the step
                out.append(_loop_end(stmt))
                continue
            # a generator or coroutine suspended inside the wrapper would hold the region open while
            # the code that resumes it runs: its time would cross theirs. Its inner statements keep theirs.
            wrap = self.regions and not _suspends(stmt, self.suspending) and self.fits(depth, stmt)
            self.children(stmt, how, depth + wrap)
            if not wrap:
                out.append(stmt)
                continue
            label = _constant(region_label(self.file_id, stmt.lineno), stmt)
            out.append(_with(how, [label], [stmt], stmt))
        return out

    def children(self, stmt: ast.stmt, how: str, depth: int) -> None:
        for holder, field, owner in _inner_blocks(stmt):
            setattr(holder, field, self.wrap_block(getattr(holder, field), how, depth + _blocks(owner, field)))

    def class_body(self, cls: ast.ClassDef) -> None:
        self.scope.append(cls.name)
        self.block_functions(cls.body)
        self.scope.pop()

    def block_functions(self, body: list[ast.stmt], depth: int = 0) -> None:
        """Instrument functions defined in a block without labelling the block itself
        (module and class level code runs once; it is not part of a step)."""
        for stmt in list(body):
            if isinstance(stmt, _FUNCTIONS):
                self.function(stmt)
            elif isinstance(stmt, ast.ClassDef):
                self.class_body(stmt)
            elif isinstance(stmt, _LOOPS) and stmt.lineno == self.step_line:
                self.step_loop(stmt, depth)
                body.insert(body.index(stmt) + 1, _loop_end(stmt))
            else:
                for holder, field, owner in _inner_blocks(stmt):
                    self.block_functions(getattr(holder, field), depth + _blocks(owner, field))

    # -- the step -----------------------------------------------------------------------------
    def step_loop(self, loop: ast.For | ast.AsyncFor | ast.While, depth: int) -> None:
        self.step_found = True
        loop.body = self.wrap_block(loop.body, "region", depth + 1)
        loop.orelse = self.wrap_block(loop.orelse, "line", depth) if loop.orelse else loop.orelse
        if isinstance(loop, ast.For):  # `async for` needs an async iterator: it gets a boundary
            label = _constant(fetch_label(self.file_id, loop.lineno), loop.iter)
            loop.iter = _runtime_call("iterate", [loop.iter, label], loop.iter)
        else:
            loop.body.insert(0, _expr_stmt(_runtime_call("step_boundary", [], loop), loop))

    def holds_step(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Whether the step loop, or the step function, lies inside `fn` (not `fn` itself)."""
        inside = range(fn.lineno, (fn.end_lineno or fn.lineno) + 1)
        if self.step_line is not None:
            return self.step_line in inside
        if self.step_function is None or self.step_found:
            return False
        if self.function_line is not None:
            return self.function_line in inside and self.function_line != fn.lineno
        return self.step_function.startswith(".".join([*self.scope, fn.name]) + ".")

    def function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        step = self.is_step_function(fn)
        generator = _is_generator(fn)
        if _compiled_to_bytecode(fn) and not step and not self.holds_step(fn):
            return
        if self.step_only and not step and not (self.step_line is not None and self.holds_step(fn)):
            self.scope.append(fn.name)  # only the step's own code: look inside for it, change nothing
            self.block_functions(fn.body)
            self.scope.pop()
            return
        doc, body = _split_docstring(fn.body)
        declarations = _hoist_declarations(fn, body)
        if not body:  # a docstring or declarations alone: nothing runs but the step's boundary
            boundary = [_expr_stmt(_runtime_call("step_boundary", [], fn), fn)] if step else []
            self.step_found = self.step_found or step
            fn.body = doc + declarations + boundary or [_locate(ast.Pass(), fn)]
            return
        deepest = max((_depth_under(s, self.depths) for s in body if not isinstance(s, (*_FUNCTIONS, ast.ClassDef))),
                       default=0)
        wrapper = 1 if 1 + deepest <= _BLOCK_LIMIT else 0  # room for the frame/step_call `with`
        self.scope.append(fn.name)
        try:
            if step:
                self.step_found = True
                boundary = _expr_stmt(_runtime_call("step_boundary", [], fn), body[0])
                call = wrapper and not isinstance(fn, ast.AsyncFunctionDef) and not generator
                if call:
                    _return_through(body)
                wrapped = self.wrap_block(body, "region", wrapper)
                if call:
                    # A step runs call start to call start; this is the call itself (a handler's
                    # latency), apart from what runs between calls.
                    wrapped = [_with("step_call", [_constant(region_label(self.file_id, fn.lineno), fn)], wrapped,
                                     body[0])]
                fn.body = doc + declarations + [boundary] + wrapped
                return
            # a copy for the compiled branch, taken before the labels go in (nested functions get
            # their own split, statements none)
            plain = _copy_statements(body) if self.regions and not isinstance(fn, ast.AsyncFunctionDef) else None
            found_before = self.step_found
            labels = self.regions and wrapper and not generator
            wrapped = self.wrap_block(body, "line", wrapper if labels else 0)
            if not self.regions or isinstance(fn, ast.AsyncFunctionDef):
                fn.body = doc + declarations + wrapped
                return
            labelled = [_with("frame", [_constant(region_label(self.file_id, fn.lineno), fn)], wrapped, body[0])] \
                if labels else wrapped
            if plain is None or self.step_found != found_before:  # the step's own code is never compiled
                fn.body = doc + declarations + labelled
                return
            self.block_functions(plain)  # in the function's scope: its nested functions' qualified names
        finally:
            self.scope.pop()
        if any(_depth_under(s, self.depths) > _BLOCK_LIMIT for s in plain):  # (its own blocks only)
            fn.body = doc + declarations + labelled
            return
        test = _runtime_call("compiling", [], body[0])
        fn.body = doc + declarations + [_locate(ast.If(test=test, body=plain, orelse=labelled), body[0])]


def _loop_end(loop: ast.stmt) -> ast.stmt:
    """`__stepscope__.loop_end()`, right after the step loop: the loop was left (it ended, or a
    break), with the loop's own last line so that a traceback still points at the user's code."""
    return _expr_stmt(_runtime_call("loop_end", [], loop), loop)


def instrument_module(tree: ast.Module, file_id: str, *, step_line: int | None = None,
                      step_function: str | None = None, regions: bool = True, step_only: bool = False) -> ast.Module:
    """Instrument a workspace module in place; with `step_line`/`step_function` it holds the step
    (`step_only`: and nothing else of it is rewritten)."""
    rewriter = _Rewriter(file_id, step_line, step_function, regions, step_only)
    rewriter.block_functions(tree.body)
    if (step_line is not None or step_function is not None) and not rewriter.step_found:
        what = f"no function named {step_function!r}" if step_function is not None \
            else f"no for/while loop starts at line {step_line}"
        if step_function is not None and step_line is not None:
            what += f" at line {step_line}"
        raise LoopNotFound(what)
    return tree


def compile_module(source: str | bytes, filename: str, file_id: str, *, step_line: int | None = None,
                   step_function: str | None = None, regions: bool = True, step_only: bool = False):
    """Parse, instrument and compile `source` as if it were the file `filename`.

    A SyntaxError of the source itself is the program's own and raised as Python would; the step
    not found raises LoopNotFound; a rewrite that cannot be compiled raises InstrumentError."""
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError:
        raise
    except (RecursionError, MemoryError, ValueError) as e:
        raise InstrumentError(f"cannot be parsed into a syntax tree here ({type(e).__name__}: {e})") from None
    try:
        instrument_module(tree, file_id, step_line=step_line, step_function=step_function, regions=regions,
                          step_only=step_only)
    except RecursionError as e:
        raise InstrumentError(f"is nested too deeply to rewrite here ({e})") from None
    try:
        return compile(tree, filename, "exec", dont_inherit=True)
    except (SyntaxError, RecursionError, MemoryError, ValueError, TypeError) as e:
        detail = e.msg if isinstance(e, SyntaxError) else str(e)
        raise InstrumentError(f"the rewritten module does not compile ({type(e).__name__}: {detail})") from None
