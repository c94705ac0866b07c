"""Rewrite a module's syntax tree so the chosen loop reports its step and its lines.

Pure `ast` work, no torch. The rewrite keeps every original line number, so tracebacks and the
trace labels point at the user's own lines, and it never touches the file on disk.

For the step loop at `line`:
- `for TARGET in ITER:` becomes `for TARGET in __stepscope__.iterate(ITER, "ss:<id>:<line>:next"):`
  — the iterator's `next()` is the batch read, reported on the loop's own line, and each step
  begins just before it.
- `while TEST:` gets `__stepscope__.step_boundary()` as the first statement of its body.
- Every statement of the body, at any nesting depth inside compound statements, is wrapped in
  `with __stepscope__.region("ss:<id>:<stmt line>"):`. A compound statement is wrapped as a whole
  (its figure includes its body) and its inner statements are wrapped too.
Function and class definitions inside the body are left alone: defining them costs nothing
worth a region.
"""

from __future__ import annotations

import ast

from .protocol import fetch_label, region_label

RUNTIME_NAME = "__stepscope__"

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SKIP = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Pass, ast.Global, ast.Nonlocal)


class LoopNotFound(LookupError):
    pass


def _runtime_call(attr: str, args: list[ast.expr], like: ast.AST) -> ast.Call:
    func = ast.Attribute(value=ast.Name(id=RUNTIME_NAME, ctx=ast.Load()), attr=attr, ctx=ast.Load())
    return ast.copy_location(ast.Call(func=func, args=args, keywords=[]), like)


def _wrap_statements(body: list[ast.stmt], file_id: str) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, _SKIP):
            out.append(stmt)
            continue
        _wrap_children(stmt, file_id)
        label = ast.copy_location(ast.Constant(region_label(file_id, stmt.lineno)), stmt)
        item = ast.withitem(context_expr=_runtime_call("region", [label], stmt), optional_vars=None)
        wrapper = ast.With(items=[item], body=[stmt])
        out.append(ast.copy_location(wrapper, stmt))
    return out


def _wrap_children(stmt: ast.stmt, file_id: str) -> None:
    """Wrap the statements nested in a compound statement, in place."""
    for field in ("body", "orelse", "finalbody"):
        block = getattr(stmt, field, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            setattr(stmt, field, _wrap_statements(block, file_id))
    for handler in getattr(stmt, "handlers", ()) or ():
        handler.body = _wrap_statements(handler.body, file_id)
    for case in getattr(stmt, "cases", ()) or ():  # match statements
        case.body = _wrap_statements(case.body, file_id)


def find_loop(tree: ast.AST, line: int) -> ast.For | ast.AsyncFor | ast.While:
    for node in ast.walk(tree):
        if isinstance(node, _LOOPS) and node.lineno == line:
            return node
    raise LoopNotFound(f"no for/while loop starts at line {line}")


def instrument_step_loop(tree: ast.Module, line: int, file_id: str) -> ast.Module:
    """Instrument the loop whose header is at `line` (1-based). Mutates and returns `tree`."""
    loop = find_loop(tree, line)
    loop.body = _wrap_statements(loop.body, file_id)
    if isinstance(loop, ast.For):  # `async for` needs an async iterator: it gets a boundary
        label = ast.copy_location(ast.Constant(fetch_label(file_id, loop.lineno)), loop.iter)
        loop.iter = _runtime_call("iterate", [loop.iter, label], loop.iter)
    else:
        boundary = ast.copy_location(ast.Expr(_runtime_call("step_boundary", [], loop)), loop)
        loop.body.insert(0, boundary)
    return ast.fix_missing_locations(tree)


def compile_instrumented(source: str | bytes, filename: str, line: int, file_id: str):
    """Parse, instrument and compile `source` as if it were the file `filename`."""
    tree = ast.parse(source, filename=filename)
    instrument_step_loop(tree, line, file_id)
    return compile(tree, filename, "exec", dont_inherit=True)
