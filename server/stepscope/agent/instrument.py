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
  and its inner statements too.
- The step function `step_function` (each call is a step; a qualified name such as
  `Trainer.training_step`, or a plain name, and its def line when `step_line` is given with it):
  `__stepscope__.step_boundary()` first, then its statements wrapped as for a loop body, all of
  them inside `__stepscope__.step_call("ss:<id>:<def line>")`: the call itself (a region of the def
  line in a profile, the call's return timed in a measure), since a step runs from one call's start
  to the next and so also holds what the program does between calls (not for a generator or an
  async function, whose call can suspend). Without regions the call is still wrapped: it is the
  one thing a measure times inside a step.
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
Function and class definitions, `pass`, `global` and `nonlocal` are never wrapped: they cost
nothing worth a region. Nor is a statement that can suspend its function (a `yield`, an `await`):
its region would stay open while the code that resumes it runs, and cross that code's regions; the
statements inside it are still wrapped.

With `regions=False` (a mode that only times the steps) the rewrite adds the step boundaries only:
`iterate` and `step_boundary`, no `with` statement at all.
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

    def frame(self, label: str) -> ContextManager[Any]: ...

    def line(self, label: str) -> ContextManager[Any]: ...

    def compiling(self) -> bool:
        """True while torch.compile traces the calling code (Dynamo folds it to a constant)."""
        ...

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SKIP = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Pass, ast.Global, ast.Nonlocal)


class LoopNotFound(LookupError):
    pass


def _runtime_call(attr: str, args: list[ast.expr], like: ast.AST) -> ast.Call:
    func = ast.Attribute(value=ast.Name(id=RUNTIME_NAME, ctx=ast.Load()), attr=attr, ctx=ast.Load())
    return ast.copy_location(ast.Call(func=func, args=args, keywords=[]), like)


def _with(attr: str, args: list[ast.expr], body: list[ast.stmt], like: ast.stmt) -> ast.With:
    item = ast.withitem(context_expr=_runtime_call(attr, args, like), optional_vars=None)
    return ast.copy_location(ast.With(items=[item], body=body), like)


class _Rewriter:
    def __init__(self, file_id: str, step_line: int | None, step_function: str | None, regions: bool = True):
        self.file_id = file_id
        # with a step function, `step_line` is its def line (when known), never a loop's
        self.step_line = step_line if step_function is None else None
        self.function_line = step_line if step_function is not None else None
        self.step_function = step_function.replace(".<locals>", "") if step_function else None
        self.regions = regions
        self.step_found = False
        self.scope: list[str] = []  # enclosing classes and functions: the qualified name's prefix

    def is_step_function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """`fn` is the step function: its qualified name (or, for a plain name, its name) matches, and
        so does its def line when one was given."""
        if self.step_function is None or self.step_found:
            return False
        qualname = ".".join([*self.scope, fn.name])
        named = qualname == self.step_function or ("." not in self.step_function and fn.name == self.step_function)
        return named and (self.function_line is None or fn.lineno == self.function_line)

    # -- statements ---------------------------------------------------------------------------
    def wrap_block(self, body: list[ast.stmt], how: str) -> list[ast.stmt]:
        """Wrap each statement of a block in a `how` ("region" or "line") context (without
        regions: only look into it for the step)."""
        out: list[ast.stmt] = []
        for stmt in body:
            if isinstance(stmt, _FUNCTIONS):
                self.function(stmt)
                out.append(stmt)
                continue
            if isinstance(stmt, ast.ClassDef):
                self.scope.append(stmt.name)
                self.block_functions(stmt.body)
                self.scope.pop()
                out.append(stmt)
                continue
            if isinstance(stmt, _SKIP):
                out.append(stmt)
                continue
            if isinstance(stmt, _LOOPS) and stmt.lineno == self.step_line:
                self.step_loop(stmt)
                out.append(stmt)  # the loop statement itself is not a line of the step
                out.append(_loop_end(stmt))
                continue
            self.children(stmt, how)
            if not self.regions or _suspends(stmt):
                # a generator or coroutine suspended here would hold the region open while the code
                # that resumes it runs: its time would cross theirs. Its inner statements keep theirs.
                out.append(stmt)
                continue
            label = ast.copy_location(ast.Constant(region_label(self.file_id, stmt.lineno)), stmt)
            out.append(_with(how, [label], [stmt], stmt))
        return out

    def children(self, stmt: ast.stmt, how: str) -> None:
        for field in ("body", "orelse", "finalbody"):
            block = getattr(stmt, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(stmt, field, self.wrap_block(block, how))
        for handler in getattr(stmt, "handlers", ()) or ():
            handler.body = self.wrap_block(handler.body, how)
        for case in getattr(stmt, "cases", ()) or ():  # match statements
            case.body = self.wrap_block(case.body, how)

    def block_functions(self, body: list[ast.stmt]) -> None:
        """Instrument functions defined in a block without labelling the block itself
        (module and class level code runs once; it is not part of a step)."""
        for i, stmt in enumerate(list(body)):
            if isinstance(stmt, _FUNCTIONS):
                self.function(stmt)
            elif isinstance(stmt, ast.ClassDef):
                self.scope.append(stmt.name)
                self.block_functions(stmt.body)
                self.scope.pop()
            elif isinstance(stmt, _LOOPS) and stmt.lineno == self.step_line:
                self.step_loop(stmt)
                body.insert(body.index(stmt) + 1, _loop_end(stmt))
            else:
                for field in ("body", "orelse", "finalbody"):
                    block = getattr(stmt, field, None)
                    if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                        self.block_functions(block)
                for handler in getattr(stmt, "handlers", ()) or ():
                    self.block_functions(handler.body)

    # -- the step -----------------------------------------------------------------------------
    def step_loop(self, loop: ast.For | ast.AsyncFor | ast.While) -> None:
        self.step_found = True
        loop.body = self.wrap_block(loop.body, "region")
        loop.orelse = self.wrap_block(loop.orelse, "line") if loop.orelse else loop.orelse
        if isinstance(loop, ast.For):  # `async for` needs an async iterator: it gets a boundary
            label = ast.copy_location(ast.Constant(fetch_label(self.file_id, loop.lineno)), loop.iter)
            loop.iter = _runtime_call("iterate", [loop.iter, label], loop.iter)
        else:
            boundary = ast.copy_location(ast.Expr(_runtime_call("step_boundary", [], loop)), loop)
            loop.body.insert(0, boundary)

    def function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        doc, body = _split_docstring(fn.body)
        step = self.is_step_function(fn)
        self.scope.append(fn.name)
        try:
            if step:
                self.step_found = True
                boundary = ast.copy_location(ast.Expr(_runtime_call("step_boundary", [], fn)), body[0])
                wrapped = self.wrap_block(body, "region")
                if not isinstance(fn, ast.AsyncFunctionDef) and not _is_generator(fn):
                    # A step runs call start to call start; this is the call itself (a handler's
                    # latency), apart from what runs between calls.
                    label = ast.Constant(region_label(self.file_id, fn.lineno))
                    wrapped = [_with("step_call", [label], wrapped, body[0])]
                fn.body = doc + [boundary] + wrapped
                return
            # a copy for the compiled branch, taken before the labels go in (nested functions get
            # their own split, statements none)
            plain = copy.deepcopy(body) if self.regions and not isinstance(fn, ast.AsyncFunctionDef) else None
            found_before = self.step_found
            wrapped = self.wrap_block(body, "line")
            if not self.regions or isinstance(fn, ast.AsyncFunctionDef):
                fn.body = doc + wrapped
                return
            if _is_generator(fn):
                labelled = wrapped
            else:
                label = ast.Constant(region_label(self.file_id, fn.lineno))
                labelled = [_with("frame", [label], wrapped, body[0])]
            if plain is None or self.step_found != found_before:  # the step's own code is never compiled
                fn.body = doc + labelled
                return
            self.block_functions(plain)  # in the function's scope: its nested functions' qualified names
        finally:
            self.scope.pop()
        test = _runtime_call("compiling", [], body[0])
        fn.body = doc + [ast.copy_location(ast.If(test=test, body=plain, orelse=labelled), body[0])]


def _loop_end(loop: ast.stmt) -> ast.stmt:
    """`__stepscope__.loop_end()`, right after the step loop: the loop was left (it ended, or a
    break), with the loop's own last line so that a traceback still points at the user's code."""
    end = ast.Expr(_runtime_call("loop_end", [], loop))
    return ast.copy_location(end, loop)


def _split_docstring(body: list[ast.stmt]) -> tuple[list[ast.stmt], list[ast.stmt]]:
    if (len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        return body[:1], body[1:]
    return [], body


def _own_nodes(node: ast.AST):
    """`node` and everything inside it but nested functions, lambdas and classes (they run elsewhere)."""
    yield node
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (*_FUNCTIONS, ast.Lambda, ast.ClassDef)):
            yield from _own_nodes(child)


def _is_generator(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for stmt in fn.body for n in _own_nodes(stmt))


def _suspends(stmt: ast.stmt) -> bool:
    """Whether running `stmt` can suspend its function (a yield, an await, an async for or with)."""
    return any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await, ast.AsyncFor, ast.AsyncWith))
               for n in _own_nodes(stmt))


def instrument_module(tree: ast.Module, file_id: str, *, step_line: int | None = None,
                      step_function: str | None = None, regions: bool = True) -> ast.Module:
    """Instrument a workspace module in place; with `step_line`/`step_function` it holds the step."""
    rewriter = _Rewriter(file_id, step_line, step_function, regions)
    rewriter.block_functions(tree.body)
    if (step_line is not None or step_function is not None) and not rewriter.step_found:
        what = f"no function named {step_function!r}" if step_function is not None \
            else f"no for/while loop starts at line {step_line}"
        if step_function is not None and step_line is not None:
            what += f" at line {step_line}"
        raise LoopNotFound(what)
    return ast.fix_missing_locations(tree)


def compile_module(source: str | bytes, filename: str, file_id: str, *, step_line: int | None = None,
                   step_function: str | None = None, regions: bool = True):
    """Parse, instrument and compile `source` as if it were the file `filename`."""
    tree = ast.parse(source, filename=filename)
    instrument_module(tree, file_id, step_line=step_line, step_function=step_function, regions=regions)
    return compile(tree, filename, "exec", dont_inherit=True)
