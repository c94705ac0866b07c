"""The functions and methods a Python source defines, by qualified name: what `--function` can name.

Pure `ast`, standard library only (like loops.py).

Invariants:
- A qualified name is the dotted path of enclosing classes and functions, as Python's `__qualname__`
  without its `<locals>` parts: `Trainer.training_step`, `main.step` for a `step` defined inside
  `main`.
- `functions_named(source, name)` matches `name` against the whole qualified name, or, for a name
  without a dot, against the last part too; results are in source order, never guessed between.
- `function_at(source, line)` is the innermost function whose `def` line or body holds `line`
  (decorators are not part of it).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .loops import parse

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Function:
    qualname: str
    line: int  # the def line (1-based), decorators not counted
    end_line: int = 0  # the last line of its body

    def holds(self, line: int) -> bool:
        return self.line <= line <= self.end_line


def all_functions(source: str | bytes | ast.Module) -> list[Function]:
    """Every function and method of `source`, in source order. Raises `SourceSyntaxError`."""
    tree = source if isinstance(source, ast.Module) else parse(source)
    out: list[Function] = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, _FUNCTIONS):
                qual = f"{prefix}{node.name}"
                out.append(Function(qual, node.lineno, node.end_lineno or node.lineno))
                visit(node.body, qual + ".")
            elif isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}.")
            else:
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                        visit([child], prefix)

    visit(tree.body, "")
    out.sort(key=lambda f: f.line)
    return out


def functions_named(source: str | bytes | ast.Module, name: str) -> list[Function]:
    """The functions of `source` that `name` names: `Trainer.step` (the qualified name) or `step` (any
    function or method with that name)."""
    name = name.replace(".<locals>", "")
    return [f for f in all_functions(source)
            if f.qualname == name or ("." not in name and f.qualname.rsplit(".", 1)[-1] == name)]


def function_at(source: str | bytes | ast.Module, line: int) -> Function | None:
    """The innermost function (or method) of `source` that holds the 1-based `line`, or None."""
    holding = [f for f in all_functions(source) if f.holds(line)]
    return max(holding, key=lambda f: f.line) if holding else None
