"""Where a file's compound statements end: a `for`, `while`, `with`, `if`, `try`, `match` or a `def`
header holds the lines below it up to its last one, so its figure holds theirs.

    compound_ends(text) -> {header line: last line}   (1-based; {} for text that does not parse)

Pure, stdlib only. A statement whose header spans several lines is keyed by its first line, as a
run's figures are.
"""

from __future__ import annotations

import ast

_COMPOUND = (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.If, ast.Try, ast.FunctionDef,
             ast.AsyncFunctionDef, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
             *((ast.Match,) if hasattr(ast, "Match") else ()))


def compound_ends(text: str) -> dict[int, int]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    return {node.lineno: node.end_lineno for node in ast.walk(tree)
            if isinstance(node, _COMPOUND) and node.end_lineno is not None and node.end_lineno > node.lineno}
