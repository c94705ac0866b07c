"""Re-check a document after an edit by re-parsing only the `def` or `class` the edit touched.

Invariant: `DocumentChecker(path, config).check(text)` returns exactly what
`check_source(text, path, config)` returns, whatever the earlier texts were.

How. After a full check the module is split into its top-level statements ("blocks"), and each
top-level class into the statements of its body ("members"); a block or member runs from its
first line (decorators included) to the line before the next one. When an edit changes lines of
one `def`/`class` only — a member of a top-level class when it lies inside one, else a top-level
block — that statement alone is parsed at its place (a top-level one standalone, a member under
a one-line `class` header put on the line above it), and the rules run over a stand-in module:
the module-level code as it is, every other `def`/`class` reduced to what runs at module level
(decorators, defaults, class-level statements), and the new statement. Module-wide facts come
from the `ModuleSummary` of the last full check. The statement's diagnostics are replaced; all
others are kept, moved by the number of lines the edit added or removed.

That is only safe when nothing the rest of the module can see of the edited statement changed,
so these are compared before and after: its imports, the names it binds to a profiler, its
assignments as the rules read them (`assignment_traits`, constant names), its loop targets and
parameters, whether it moves something to CUDA, its module-level part, and the facts the rules
read from the whole text (`text_facts`). Anything else falls back to a full check: a statement
that does not parse or now parses as something else (or at another indentation), an edit that
spans two statements or touches module-level code, a text that only parsed in part (the state
of the last text that parsed whole is kept, so the next edit is compared with that one).
"""

from __future__ import annotations

import ast
import bisect
import copy
import dataclasses
import re
from dataclasses import dataclass, field

from ..source.loops import profiler_names_of, terminal_name
from .config import Config
from .context import (
    ModuleContext,
    ModuleSummary,
    function_sync_facts,
    source_lines,
    syncing_names,
    uses_other_framework,
)
from .engine import (
    check_tree,
    collector_paused,
    finalize,
    needs_parse,
    parse_tolerant,
    selected_codes,
)
from .edits import split_lines
from .model import Diagnostic, Edit, Fix
from .profiler import (
    assignment_traits,
    existence_checked_words,
    checks_supported_activities,
    chooses_device,
    is_cuda_move,
)
from .helper_reads import host_reading_helper_names
from .sync import places_on_a_device
from .tensors import constant_names, constant_names_of

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)




def text_facts(text: str) -> tuple:
    """Everything a rule reads from the whole text rather than from the nodes it reports on."""
    return ("cuda" in text, places_on_a_device(text), existence_checked_words(text), checks_supported_activities(text),
            chooses_device(text), "batches" in text, uses_other_framework(text),
            "barry_as_FLUFL" in text)  # the one future import that changes how code parses


def first_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None) or ()
    return min([stmt.lineno, *(d.lineno for d in decorators)])


def stand_in(stmt: ast.stmt, keep_ends: bool = True) -> ast.stmt:
    """What of a top-level statement runs at module level: a def without its body, a class with
    its methods' bodies removed. Other statements stay whole.

    `keep_ends=False` also drops where each def/class ends: no rule reads it (they read the
    positions of loops, `with` blocks and calls), and it moves with every edit of a last line."""
    if not isinstance(stmt, _DEFINITIONS):
        return stmt
    shell = copy.copy(stmt)
    if isinstance(stmt, ast.ClassDef):
        shell.body = [stand_in(s, keep_ends) if isinstance(s, _DEFINITIONS) else s
                      for s in stmt.body]
    else:
        shell.body = []
    if not keep_ends:
        shell.end_lineno = shell.end_col_offset = None
    return shell


_ACTIVE = (ast.Call, ast.BinOp, ast.Lambda, ast.IfExp, ast.NamedExpr)


def is_inert(shell: ast.stmt) -> bool:
    """A def stand-in whose decorators and defaults hold nothing a rule records (no call, no
    arithmetic, no lambda, no conditional, no binding): leaving it out of the stand-in module
    changes no answer, and the walk over hundreds of them is most of an incremental check."""
    if not isinstance(shell, _FUNCTIONS):
        return False
    parts = [*shell.decorator_list, *shell.args.defaults,
             *(d for d in shell.args.kw_defaults if d is not None)]
    return not any(isinstance(node, _ACTIVE) for part in parts for node in ast.walk(part))


class _ImportNames:
    """Just enough of a context to resolve dotted names through the module's imports."""

    def __init__(self, imports: dict[str, str]):
        self.imports = imports

    dotted = ModuleContext.dotted


def exports(stmt: ast.stmt, names: _ImportNames) -> tuple:
    """What other blocks can see of `stmt` (see the module docstring)."""
    imports, assigns, loops, functions, traits = [], [], [], [], []
    moves_to_cuda = False
    for node in ast.walk(stmt):
        kind = type(node)
        if kind is ast.Call:
            moves_to_cuda = moves_to_cuda or is_cuda_move(node, names)  # type: ignore[arg-type]
        elif kind in (ast.Assign, ast.AugAssign, ast.AnnAssign):
            assigns.append(node)
            if kind is ast.Assign:
                traits.extend((t.id, assignment_traits(node.value))  # type: ignore[attr-defined]
                              for t in node.targets if isinstance(t, ast.Name))  # type: ignore[attr-defined]
        elif kind in (ast.For, ast.AsyncFor, ast.While):
            loops.append(node)
        elif kind in _FUNCTIONS:
            functions.append(node)
        elif kind in (ast.Import, ast.ImportFrom):
            imports.append(node)
    # Imports count in source order (a later one rebinds a name); where they are does not.
    imports.sort(key=lambda n: (n.lineno, n.col_offset))
    module_part = "nothing" if is_constant_statement(stmt) else ast.dump(
        stand_in(stmt, keep_ends=False), include_attributes=True)
    return (tuple(ast.dump(n) for n in imports), profiler_names_of([stmt]),
            sorted(traits, key=repr),
            constant_names_of(assigns, loops, functions), moves_to_cuda, module_part)


def sync_facts_of(stmt: ast.stmt) -> tuple:
    """What `ModuleSummary.sync_facts` holds for the functions defined in `stmt`. Unlike the
    exports, these may change in an incremental check: the summary is updated instead."""
    return function_sync_facts(
        n for n in ast.walk(stmt) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))


def _replace_facts(all_facts: tuple, old: tuple, new: tuple) -> tuple:
    remaining = list(all_facts)
    for fact in old:
        remaining.remove(fact)
    return tuple(sorted([*remaining, *new], key=lambda f: (f[0], f[1], sorted(f[2]))))


def is_constant_statement(stmt: ast.stmt) -> bool:
    """A docstring or other lone constant: it runs nothing and no rule reads it."""
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)


@dataclass
class _Block:
    """A top-level statement, or a statement of a top-level class's body."""

    start: int  # 1-based first line (decorators included)
    end: int  # last line before the next block
    col: int
    recheckable: bool  # a def or class, or a lone constant (not the module's first statement)
    stand_in: ast.stmt  # shifted in place when lines above come or go
    members: list["_Block"] | None = None  # the body of a top-level class
    exports: tuple | None = None  # of the block's current text, computed on first use
    sync_facts: tuple | None = None  # `sync_facts_of` its current text, computed on first use
    inert: bool = False  # `is_inert(stand_in)`

    def __post_init__(self) -> None:
        self.inert = is_inert(self.stand_in)

    def shift(self, delta: int) -> None:
        self.start += delta
        self.end += delta
        self.exports = None  # its positions moved
        ast.increment_lineno(self.stand_in, delta)
        for member in self.members or ():
            member.start += delta
            member.end += delta
            member.exports = None  # (its stand-in is part of this one's: already moved)


def _blocks(stmts: list[ast.stmt], shells: list[ast.stmt], last_line: int,
            nested: bool = False) -> list[_Block]:
    starts = [first_line(stmt) for stmt in stmts]
    ends = [s - 1 for s in starts[1:]] + [last_line]
    out = []
    for start, end, stmt, shell in zip(starts, ends, stmts, shells):
        members = None
        if not nested and isinstance(stmt, ast.ClassDef) and stmt.body:
            members = _blocks(stmt.body, shell.body, end, nested=True)  # type: ignore[attr-defined]
        recheckable = isinstance(stmt, _DEFINITIONS) or (
            is_constant_statement(stmt) and (nested or stmt is not stmts[0]))
        out.append(_Block(start, end, stmt.col_offset, recheckable, shell, members))
    return out


@dataclass
class _State:
    """What the last check left behind for the next one."""

    lines: list[str]
    blocks: list[_Block]
    facts: tuple
    raw: list[Diagnostic]  # what the rules found, before suppression (`engine.finalize`)
    diagnostics: list[Diagnostic]
    context: ModuleContext | None  # of the full check, until the summary is taken from it
    summary: ModuleSummary | None = None
    names: _ImportNames | None = field(default=None)

    def module_summary(self) -> ModuleSummary:
        if self.summary is None:
            ctx = self.context
            assert ctx is not None
            self.summary = ModuleSummary(
                imports=dict(ctx.imports),
                profiler_names=profiler_names_of(ctx.tree.body),
                assigned=ctx.assigned_values(),
                constant_names=constant_names(ctx),
                moves_to_cuda=any(is_cuda_move(call, ctx) for call, _scope in ctx.calls),
                syncing_functions=ctx.syncing_functions(),
                sync_facts=function_sync_facts(ctx.functions_defs),
                host_reading_helpers=host_reading_helper_names(ctx.tree),
            )
            self.names = _ImportNames(self.summary.imports)
            self.context = None
        return self.summary


def _containing(blocks: list[_Block], first: int, old_last: int) -> int | None:
    """Index of the block holding lines first..old_last (old numbering), if one does."""
    index = bisect.bisect_right([b.start for b in blocks], first) - 1
    if index < 0 or old_last > blocks[index].end:
        return None
    return index


class DocumentChecker:
    """The static diagnostics of one open document, re-checked edit after edit."""

    def __init__(self, path: str, config: Config | None = None):
        self.path = path
        self.config = config or Config()
        self.codes = selected_codes(self.config, path)
        self._state: _State | None = None
        self.last_was_incremental = False

    def check(self, text: str) -> list[Diagnostic]:
        with collector_paused():
            found = self._incremental(text)
            self.last_was_incremental = found is not None
            if found is None:
                found = self._full(text)
        return list(found)

    # ---- full check --------------------------------------------------------------------------
    def _full(self, text: str) -> list[Diagnostic]:
        # The state of the last text that parsed whole is kept through half-typed texts: once
        # the text parses again, it usually differs from that one in a single block.
        if not self.codes or not needs_parse(text):
            return []
        tree, parsed_text = parse_tolerant(text)
        if tree is None:
            return []
        found, ctx, raw = check_tree(tree, parsed_text, self.path, self.config, self.codes)
        if parsed_text is text and ctx is not None:
            # Stand-ins share nodes with `tree`; shifting them in place is safe because nothing
            # reads positions from that tree afterwards (the summary is taken before any shift).
            lines = split_lines(text)
            shells = [stand_in(stmt) for stmt in tree.body]
            self._state = _State(lines=lines, blocks=_blocks(tree.body, shells, len(lines)),
                                 facts=text_facts(text), raw=raw, diagnostics=found,
                                 context=ctx)
        return found

    # ---- one statement -----------------------------------------------------------------------
    def _incremental(self, text: str) -> list[Diagnostic] | None:
        state = self._state
        if state is None or not needs_parse(text):
            return None
        lines = split_lines(text)
        changed = _changed_lines(state.lines, lines)
        if changed is None:
            return state.diagnostics
        first, old_last, delta = changed  # 1-based; old_last < first for a pure insertion
        index = _containing(state.blocks, first, old_last)
        if index is None:
            return None
        outer = state.blocks[index]
        target, member = outer, None
        if outer.members:
            member = _containing(outer.members, first, old_last)
            if member is not None and (outer.members[member].recheckable
                                       or not outer.recheckable):
                target = outer.members[member]
            else:
                member = None  # class-level code, or more than one member: the whole class
        if target.end + delta < target.start or text_facts(text) != state.facts:
            return None
        if target.recheckable:
            found = self._recheck(state, lines, text, index, member, target, delta)
        else:
            found = _same_code(state, lines, target, delta)
            if found is not None:
                _shift_below(state, index, member, delta)
        if found is None:
            return None
        target.end += delta
        state.lines = lines
        state.raw = found
        state.diagnostics = finalize(found, source_lines(text))
        return state.diagnostics

    def _recheck(self, state: _State, lines: list[str], text: str, index: int,
                 member: int | None, target: _Block, delta: int) -> list[Diagnostic] | None:
        """What the rules find in the new text, re-checking `target` alone (None: not safe)."""
        constant = is_constant_statement(target.stand_in)
        new_end = target.end + delta
        node = _parse_statement(lines, target.start, new_end, target.col, constant)
        if node is None:
            return None
        summary = state.module_summary()
        names = state.names
        assert names is not None
        if target.exports is None or target.sync_facts is None:
            before = _parse_statement(state.lines, target.start, target.end, target.col, constant)
            if before is None:
                return None
            target.exports = exports(before, names)
            target.sync_facts = sync_facts_of(before)
        new_exports = exports(node, names)
        if new_exports != target.exports:
            return None
        if _meets_host_reading_helpers(node, summary, lines, target.start, new_end):
            return None
        new_sync_facts = sync_facts_of(node)
        if new_sync_facts != target.sync_facts:
            facts = _replace_facts(summary.sync_facts, target.sync_facts, new_sync_facts)
            syncing = syncing_names(facts)
            changed = syncing ^ summary.syncing_functions
            if changed and _called_outside(changed, lines, target.start, new_end):
                return None  # whether a call elsewhere waits for the device changed
            summary = state.summary = dataclasses.replace(
                summary, sync_facts=facts, syncing_functions=syncing)
        outer = state.blocks[index]
        _shift_below(state, index, member, delta)
        # The first statement stays: it decides where a fix may add an import.
        body: list[ast.stmt] = [b.stand_in for i, b in enumerate(state.blocks)
                                if i == index or i == 0 or not b.inert]
        at = body.index(outer.stand_in)
        if member is None:
            body[at] = node
        else:
            shell = copy.copy(outer.stand_in)
            shell.body = list(shell.body)  # type: ignore[attr-defined]
            shell.body[member] = node  # type: ignore[attr-defined]
            body[at] = shell
        found, ctx, raw = check_tree(ast.Module(body=body, type_ignores=[]), text, self.path,
                                     self.config, self.codes, summary=summary)
        if ctx is None:
            self._state = None  # the blocks below have moved: this state fits no text now
            return None
        inside = [d for d in raw if target.start <= d.line <= new_end]
        kept = [d if d.line < target.start else _shifted(d, target.end, delta)
                for d in state.raw if not target.start <= d.line <= target.end]
        target.exports = new_exports
        target.sync_facts = new_sync_facts
        target.stand_in = stand_in(node)
        target.inert = is_inert(target.stand_in)
        if member is not None:
            outer.stand_in.body[member] = target.stand_in  # type: ignore[attr-defined]
            outer.exports = outer.sync_facts = None
        elif isinstance(node, ast.ClassDef) and node.body:
            target.members = _blocks(node.body, target.stand_in.body,  # type: ignore[attr-defined]
                                     new_end, nested=True)
        else:
            target.members = None
        return kept + inside


def _meets_host_reading_helpers(node: ast.stmt, summary: ModuleSummary, lines: list[str],
                                start: int, end: int) -> bool:
    """The edited statement calls a helper defined elsewhere that reads its arguments on the
    host, or changes which of its own helpers do, or defines one called elsewhere: SS101 reports
    those reads at the calls, and a check of the statement alone sees no other helper's body."""
    defined = {n.name for n in ast.walk(node) if isinstance(n, _FUNCTIONS)}
    reading_now = host_reading_helper_names(ast.Module(body=[node], type_ignores=[]))
    reading_before = summary.host_reading_helpers & defined
    if reading_now != reading_before:
        return True
    if reading_now and _called_outside(reading_now, lines, start, end):
        return True
    called = {terminal_name(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
    return bool((called & summary.host_reading_helpers) - defined)


def _called_outside(names: frozenset[str], lines: list[str], start: int, end: int) -> bool:
    """Some line outside start..end (1-based) calls one of `names`."""
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\s*\(")
    return any(pattern.search(line) for i, line in enumerate(lines, start=1)
               if not start <= i <= end)


def _shift_below(state: _State, index: int, member: int | None, delta: int) -> None:
    """Move everything below the edited statement by `delta` lines."""
    if not delta:
        return
    for later in state.blocks[index + 1:]:
        later.shift(delta)
    if member is not None:
        outer = state.blocks[index]
        assert outer.members is not None
        for later in outer.members[member + 1:]:
            later.shift(delta)
        outer.end += delta
        outer.exports = None


def _same_code(state: _State, lines: list[str], target: _Block,
               delta: int) -> list[Diagnostic] | None:
    """The rules' findings when the edit left the code of `target` as it was: only comments or
    spaces changed (same tree, same positions), or, for an import, lines came or went inside it
    (same tree; no rule reads where a plain top-level import is). None otherwise."""
    new_end = target.end + delta
    node = _parse_statement(lines, target.start, new_end, target.col, kind=None)
    before = _parse_statement(state.lines, target.start, target.end, target.col, kind=None)
    if node is None or before is None:
        return None
    if not delta:
        if ast.dump(node, include_attributes=True) != ast.dump(before, include_attributes=True):
            return None
        return state.raw
    if target.col or not isinstance(node, (ast.Import, ast.ImportFrom)) \
            or getattr(node, "module", None) == "__future__" or ast.dump(node) != ast.dump(before):
        return None
    target.stand_in = node
    return [d if d.line < target.start else _shifted(d, target.end, delta) for d in state.raw]


def _changed_lines(old: list[str], new: list[str]) -> tuple[int, int, int] | None:
    """(first changed line, last changed line of `old`, change in line count), lines 1-based;
    None when the texts are equal."""
    if old == new:
        return None
    shortest = min(len(old), len(new))
    first = next((i for i in range(shortest) if old[i] != new[i]), shortest)
    same_tail = 0
    while same_tail < shortest - first and old[-1 - same_tail] == new[-1 - same_tail]:
        same_tail += 1
    return first + 1, len(old) - same_tail, len(new) - len(old)


def _parse_statement(lines: list[str], start: int, end: int, col: int,
                     constant: bool = False, kind: str | None = "recheckable") -> ast.stmt | None:
    """Lines start..end parsed on their own, at their place, when they hold exactly one
    statement that begins on `start` at column `col` (> 0: the body of a top-level class, parsed
    under a one-line class header on the line above): a def or class, or with `constant` a lone
    constant; with `kind=None`, any statement."""
    text = "".join(lines[start - 1:end])
    try:
        if col == 0:
            module = ast.parse("\n" * (start - 1) + text)
        elif start >= 2:
            module = ast.parse("\n" * (start - 2) + "class _:\n" + text)
        else:
            return None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    body = module.body
    if col and len(body) == 1 and isinstance(body[0], ast.ClassDef):
        body = body[0].body
    if len(body) != 1 or first_line(body[0]) != start or body[0].col_offset != col:
        return None
    if kind is None:
        return body[0]
    if not (is_constant_statement(body[0]) if constant else isinstance(body[0], _DEFINITIONS)):
        return None
    return body[0]


_LINE_REFERENCE = re.compile(r"\bline (\d+)\b")


def _shifted(diag: Diagnostic, after: int, delta: int) -> Diagnostic:
    """`diag` with every line below `after` moved by `delta` (its range, its fixes, and the
    lines its message names)."""
    def move(line: int) -> int:
        return line + delta if line > after else line

    fixes = tuple(Fix(f.title, tuple(Edit(move(e.line), e.col, move(e.end_line), e.end_col,
                                          e.new_text) for e in f.edits)) for f in diag.fixes)
    message = _LINE_REFERENCE.sub(lambda m: f"line {move(int(m.group(1)))}", diag.message)
    return dataclasses.replace(diag, line=move(diag.line), end_line=move(diag.end_line),
                               message=message, fixes=fixes)
