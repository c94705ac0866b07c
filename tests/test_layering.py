"""The layering of docs/architecture.md, checked on the source: the table's "may import" column is
the rule, read from the document itself, so the two cannot drift apart.

Every import statement of server/stepscope is checked, those inside functions too (the CLI's
commands defer theirs to `run()`), by the part it lives in. `tests/test_no_heavy_imports.py` is the
run-time complement: the language server and `stepscope check` at work with a torch that cannot be
imported.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "server" / "stepscope"
DOC = REPO / "docs" / "architecture.md"
STDLIB = frozenset(sys.stdlib_module_names) | {"tomllib"}  # tomllib: stdlib from 3.11, a name here on 3.10 too


@dataclass
class Part:
    """One row of the table: a folder (`agent/`) or a module (`cli.py`) of the package."""

    path: str  # relative to server/stepscope: "agent/" or "cli.py"
    stdlib: bool = False
    parts: set[str] = field(default_factory=set)  # parts of Stepscope it may import, dotted ("agent.protocol")
    modules: set[str] = field(default_factory=set)  # third-party top-level modules
    everything_but: set[str] | None = None  # every part of Stepscope but these
    deferred: "Part | None" = None  # what it may import inside a function as well

    @property
    def name(self) -> str:
        """The part's dotted name, as the table's may-import column writes it (`agent`, `commands.check`)."""
        return self.path.removesuffix("/").removesuffix(".py").replace("/", ".")

    @property
    def module(self) -> str:
        return "stepscope" if self.name == "__init__" else f"stepscope.{self.name}"


def _allowances(cell: str, row: str) -> Part:
    part = Part(path=row)
    for item in (i.strip() for i in cell.split(",")):
        if not item:
            continue
        if item == "stdlib":
            part.stdlib = True
        elif m := re.fullmatch(r"everything but ((?:`[\w.]+`(?: and |, )?)+)", item):
            part.everything_but = set(re.findall(r"`([\w.]+)`", m.group(1)))
        elif m := re.fullmatch(r"third-party `([\w.]+)`", item):
            part.modules.add(m.group(1))  # a third-party module named as a part is (the `mcp` SDK, part `mcp/`)
        elif m := re.fullmatch(r"`([\w.]+)`", item):
            part.parts.add(m.group(1))  # sorted into parts and third-party modules once every row is read
        else:
            raise AssertionError(f"docs/architecture.md, row {row}: cannot read {item!r} in the may-import column "
                                 "(write stdlib, `name`, third-party `name`, or everything but `name`; comments in parentheses)")
    return part


def read_table() -> dict[str, Part]:
    """The rows of the table that name a folder or module of server/stepscope, by path."""
    rows: dict[str, Part] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`server/stepscope/"):
            continue
        path = cells[0].strip("`").removeprefix("server/stepscope/")
        cell = re.sub(r"\([^()]+\)", "", cells[2]).replace("**", "").replace(" only", "")
        module_level, _, deferred = cell.partition("; inside `run()`:")
        part = _allowances(module_level, path)
        if deferred:
            part.deferred = _allowances(deferred, path)
        rows[path] = part
    names = {p.name for p in rows.values()}
    for part in (*rows.values(), *(p.deferred for p in rows.values() if p.deferred)):
        third_party = {n for n in part.parts if n.split(".")[0] not in names}
        part.modules |= third_party
        part.parts -= third_party
    return rows


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _part_of(module: str, rows: dict[str, Part]) -> Part | None:
    """The most specific row holding `module` (a name of the package)."""
    rel = module.removeprefix("stepscope").lstrip(".").replace(".", "/")
    candidates = [p for p in rows.values()
                  if (p.path.endswith("/") and (rel + "/").startswith(p.path)) or rel + ".py" == p.path
                  or (rel == "" and p.path == "__init__.py")]
    return max(candidates, key=lambda p: len(p.path), default=None)


def _shown(module: str, path: Path) -> str:
    rel = "/".join(module.split(".")[1:])
    return "server/stepscope/" + (f"{rel}/__init__.py".lstrip("/") if path.name == "__init__.py" else f"{rel}.py")


@functools.lru_cache(maxsize=None)
def _imports(path: Path, module: str) -> tuple[tuple[int, str, bool], ...]:
    """(line, imported module, inside a function) for every import statement of a module."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((child.lineno, alias.name, in_function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[:len(package.split(".")) - (child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                # `from . import x` imports the module x when there is one, else a name of the package
                names = [f"{target}.{a.name}" for a in child.names] if child.module is None or target.startswith(
                    "stepscope") else [target]
                found.extend((child.lineno, _known(n), in_function) for n in names)
            visit(child, nested)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), False)
    return tuple(found)


def _known(name: str) -> str:
    """The longest prefix of `name` that is a module of the package (a name imported from a module is not)."""
    if not name.startswith("stepscope"):
        return name
    while name not in MODULES and "." in name:
        candidate = name.rpartition(".")[0]
        if candidate == "stepscope" or candidate in MODULES:
            return candidate
        name = candidate
    return name


def _allowed(target: str, own: Part, rule: Part, rows: dict[str, Part]) -> bool:
    top = target.split(".")[0]
    if top != "stepscope":
        return (rule.stdlib and top in STDLIB) or top in rule.modules
    if target == "stepscope":
        return True  # the package's own __init__: the version
    held_by = _part_of(target, rows)
    if held_by is own:
        return True
    if any(target == f"stepscope.{n}" or target.startswith(f"stepscope.{n}.") for n in rule.parts):
        return True
    if rule.everything_but is not None:
        return not any(target == f"stepscope.{n}" or target.startswith(f"stepscope.{n}.") for n in rule.everything_but)
    return False


def violations(rows: dict[str, Part], modules: dict[str, Path] = MODULES) -> list[str]:
    out = []
    for module, path in modules.items():
        own = _part_of(module, rows)
        if own is None:
            out.append(f"{_shown(module, path)}: no row of docs/architecture.md holds it")
            continue
        for line, target, in_function in sorted(set(_imports(path, module))):
            if _allowed(target, own, own, rows):
                continue
            if in_function and own.deferred is not None and _allowed(target, own, own.deferred, rows):
                continue
            where = "inside a function" if in_function else "at module level"
            out.append(f"{_shown(module, path)}:{line}: imports {target} {where}; "
                       f"its row ({own.path}) does not allow it")
    return out


def test_every_import_keeps_to_the_layering_of_the_architecture_document() -> None:
    rows = read_table()
    assert violations(rows) == []


def test_every_row_names_a_folder_or_module_that_exists() -> None:
    for path in read_table():
        assert (PACKAGE / path).exists(), f"docs/architecture.md has a row for {path}, which does not exist"


def test_the_table_holds_the_rules_the_parts_rely_on() -> None:
    """What the product needs from the layering, read from the document (so it cannot be edited away)."""
    rows = read_table()
    agent = rows["agent/"]
    assert agent.parts == {"agent.protocol"} and agent.modules == {"torch"} and agent.everything_but is None
    assert rows["agent/protocol.py"].parts == set() and rows["agent/protocol.py"].modules == set()
    assert rows["capture/"].parts >= {"agent.protocol"} and "agent" not in rows["capture/"].parts
    for name, part in rows.items():
        rules = [part] + ([part.deferred] if part.deferred else [])
        if not name.startswith("lsp/"):
            assert not any({"pygls", "lsprotocol"} & r.modules for r in rules), f"{name} may import the LSP stack"
        if name != "agent/":
            assert not any("torch" in r.modules for r in rules), f"{name} may import torch"
    for name in ("trace/", "analysis/", "rules/", "source/", "config.py"):
        assert rows[name].everything_but is None and rows[name].deferred is None
    for name in ("rules/", "source/", "config.py", "commands/check.py"):
        rules = [rows[name]] + ([rows[name].deferred] if rows[name].deferred else [])
        assert not any({"trace", "analysis"} & r.parts for r in rules), f"{name} may import the trace engine"
    assert {"agent", "trace"} <= rows["lsp/"].everything_but and "agent" in rows["commands/"].deferred.everything_but


# -- the checker itself: each kind of breach is caught -----------------------------------------------

@pytest.mark.parametrize("module, statement, expected", [
    ("agent/main.py", "from ..analysis import steps", "imports stepscope.analysis.steps at module level"),
    ("agent/main.py", "import orjson", "imports orjson"),
    ("trace/model.py", "import torch", "imports torch"),
    ("analysis/steps.py", "from lsprotocol import types", "imports lsprotocol"),
    ("rules/engine.py", "from ..trace import Kind", "imports stepscope.trace"),
    ("capture/runner.py", "from ..agent import profiling", "imports stepscope.agent.profiling"),
    ("commands/check.py", "def run(args):\n    from ..analysis.report import analyze\n",
     "imports stepscope.analysis.report inside a function"),
    ("commands/analyze.py", "from ..analysis.report import analyze", "imports stepscope.analysis.report at module level"),
    ("lsp/server.py", "def f():\n    from ..agent import main\n", "imports stepscope.agent.main inside a function"),
])
def test_a_forbidden_import_is_named_with_its_line(tmp_path: Path, module: str, statement: str,
                                                    expected: str) -> None:
    path = PACKAGE / module
    copy = tmp_path / module.replace("/", "_")
    copy.write_text(path.read_text(encoding="utf-8") + "\n" + statement + "\n", encoding="utf-8")
    found = violations(read_table(), {**MODULES, _module_name(path): copy})
    assert len(found) == 1 and expected in found[0] and found[0].startswith(f"server/stepscope/{module}:"), found


def test_a_module_without_a_row_is_named() -> None:
    rows = read_table()
    del rows["forking.py"]
    found = violations(rows)
    assert any("forking.py: no row of docs/architecture.md holds it" in v for v in found), found
