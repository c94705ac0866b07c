"""Quick fixes that change the code, not just silence a rule: offered only where they are safe.

    fixes = real_fixes(diagnostic, text)    # [] when the code is not a shape the fix is sure about
    fixes = editor_fixes(diagnostic, text)  # what the editor lists: the real fix, then the rule's own

Computed when an editor asks for the fixes of a diagnostic (a code action), from the text it was
found in, so typing never pays for them. Each fix keeps what the program computes and changes only
when the host waits or what the profiler records:

- SS101, `total += t.item()` in a loop, `total` read nowhere else in the loop and set to a number
  before it: accumulate on the device and read the value once after the loop. The sum stays the
  one Python made: a float is added in float64 (`t.detach().double()`; `.item()` gives a Python
  float), an integer as an integer; where the kind of `t` cannot be told (a call that is not a
  count), no fix. Not offered for any other read-back (a print, a condition, a value used in the
  step), where the value is needed in the step.
- SS201, a duration `clock() - start` (or `end - start`) whose clock reads are whole statements:
  synchronise the device before each clock read (only where the module imports `torch`; the call is
  guarded by `torch.cuda.is_available()`, so a CPU run is unchanged).
- SS402, `with profile(...) as prof:` holding a loop that runs at least `SCHEDULE_STEPS` times (or
  an unknown number of times) and never `continue`s: add `schedule=` the rule's `SCHEDULE` (the one
  its message names) and `prof.step()` at the end of the loop body. Results read after
  the `with` (`key_averages()`, `export_chrome_trace`) are those of the recorded steps.
- SS501: build the constant once before the loop, or on the device where sharing one tensor
  between the steps could change the results (`hoist.py` says when).
- SS401, SS403, SS405, SS502 and SS202 come with their fixes from the rules themselves;
  `editor_fixes` gives every fix of a finding in the editor's order, leaving out a rule's fix the
  whole text shows would change the results: SS405's new trace name where the file names the trace
  again (it reads it back), SS202's perf_counter() where a reading is also a time of day.

Invariant: a fix's edits never overlap, and applying them leaves code that parses (tested for each).
"""

from __future__ import annotations

import ast
import functools

from .context import source_lines
from .hoist import constant_fix
from .model import Diagnostic, Edit, Fix
from .profiler import SCHEDULE, SCHEDULE_STEPS, SCHEDULE_WORDS
SYNC = "if torch.cuda.is_available(): torch.cuda.synchronize()"
_CLOCKS = {"perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "monotonic_ns"}
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def real_fixes(diag: Diagnostic, text: str) -> list[Fix]:
    builder = _BUILDERS.get(diag.code)
    if builder is None:
        return []
    source = parse_source(text)
    if source is None:
        return []
    try:
        fix = builder(diag, source)
    except (ValueError, IndexError):
        return []
    return [fix] if fix is not None else []


@functools.lru_cache(maxsize=4)
def parse_source(text: str) -> "Source | None":
    """`text` parsed for the fixes, or None when it does not parse. Kept for the last few texts:
    `check --fix` asks for the fixes of every finding of one text in turn. A Source is never
    changed once built."""
    try:
        return Source(text, ast.parse(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def editor_fixes(diag: Diagnostic, text: str) -> list[Fix]:
    """Every fix the editor offers for `diag` on `text`, in its order: the real fix, then the
    rule's own fixes that keep the program's results with the code as it now is (a fix the rule
    attached, worked out when the finding was, cannot see the whole file: the language server
    re-checks only the function an edit touched). The suppression comment is among the rule's own."""
    src = parse_source(text)
    own = [fix for fix in diag.fixes if src is None or _keeps_results(diag, fix, src)]
    return [*real_fixes(diag, text), *own]


def _keeps_results(diag: Diagnostic, fix: Fix, src: "Source") -> bool:
    if diag.code == "SS405":  # a new trace name: no other line may name the file
        for edit in fix.edits:
            node = src.node_at((edit.line, edit.col, edit.end_line, edit.end_col), ast.Constant)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and src.text.count(node.value) > 1:
                return False
        return True
    if diag.code == "SS202" and not fix.title.startswith("Ignore "):
        return _clock_readings_only_subtracted(fix, src)
    return True


def _clock_readings_only_subtracted(fix: Fix, src: "Source") -> bool:
    """perf_counter() is no time of day: each name a converted reading is stored in must be read
    only in subtractions (`end - t0`), never as a timestamp (`time.ctime(t0)`, a logged start)."""
    names = set()
    for edit in fix.edits:
        func = src.node_at((edit.line, edit.col, edit.end_line, edit.end_col), ast.Attribute)
        call = src.parent.get(func) if func is not None else None
        stmt = src.parent.get(call) if call is not None else None
        if isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name):
            names.add(stmt.targets[0].id)
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load):
            parent = src.parent.get(node)
            if not (isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Sub)):
                return False
    return True


class Source:
    """A parsed text with each node's parent; positions in code points, as diagnostics have them
    (`ast` counts UTF-8 bytes)."""

    def __init__(self, text: str, tree: ast.Module):
        self.text = text
        self.lines = source_lines(text)
        self.tree = tree
        self.parent: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node
        self._starting: dict[int, list[ast.AST]] | None = None

    def col(self, line: int, byte_col: int) -> int:
        text = self.lines[line - 1] if 1 <= line <= len(self.lines) else ""
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))

    def span(self, node: ast.AST) -> tuple[int, int, int, int]:
        return (node.lineno, self.col(node.lineno, node.col_offset),
                node.end_lineno, self.col(node.end_lineno, node.end_col_offset))

    def segment(self, node: ast.AST) -> str | None:
        """The source of `node` (`ast.get_source_segment` without splitting the text each time)."""
        line, end_line = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        if line is None or end_line is None or not 1 <= line <= end_line <= len(self.lines):
            return None
        chunk = [text.encode("utf-8") for text in self.lines[line - 1:end_line]]
        if len(chunk) == 1:
            return chunk[0][node.col_offset:node.end_col_offset].decode("utf-8", "replace")
        chunk[0] = chunk[0][node.col_offset:]
        chunk[-1] = chunk[-1][:node.end_col_offset]
        return "\n".join(c.decode("utf-8", "replace") for c in chunk)

    def at(self, diag: Diagnostic, kind: type) -> ast.AST | None:
        """The node of `kind` spanning exactly the diagnostic's range."""
        return self.node_at((diag.line, diag.col, diag.end_line, diag.end_col), kind)

    def node_at(self, wanted: tuple[int, int, int, int], kind: type) -> ast.AST | None:
        """The node of `kind` spanning exactly `wanted` (line, col, end_line, end_col)."""
        if self._starting is None:  # by first line, once: a file's every finding asks
            self._starting = {}
            for node in self.parent:
                if isinstance(node, (ast.expr, ast.stmt)):
                    self._starting.setdefault(node.lineno, []).append(node)
        for node in self._starting.get(wanted[0], ()):
            if isinstance(node, kind) and self.span(node) == wanted:
                return node
        return None

    def statement_of(self, node: ast.AST) -> ast.stmt:
        while not isinstance(node, ast.stmt):
            node = self.parent[node]
        return node

    def enclosing(self, node: ast.AST, kinds) -> ast.AST | None:
        node = self.parent.get(node)
        while node is not None and not isinstance(node, kinds):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                return None
            node = self.parent.get(node)
        return node

    def indent(self, line: int) -> str:
        text = self.lines[line - 1]
        return text[:len(text) - len(text.lstrip())]

    def starts_its_line(self, stmt: ast.stmt) -> bool:
        return self.lines[stmt.lineno - 1][:stmt.col_offset].strip() == ""

    def after(self, node: ast.AST, body_indent: str, code: str) -> Edit:
        """An edit that puts `code` on a line of its own after `node`'s last line."""
        end = node.end_lineno
        if end < len(self.lines):
            return Edit(end + 1, 0, end + 1, 0, f"{body_indent}{code}\n")
        last = self.lines[end - 1]
        return Edit(end, len(last), end, len(last), f"\n{body_indent}{code}")

    def imports_torch(self) -> bool:
        return any(isinstance(n, ast.Import) and any(a.name == "torch" and a.asname is None for a in n.names)
                   for n in ast.walk(self.tree))


def _loads_name(scope: ast.AST, name: str, skip: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
               for n in ast.walk(scope) if n is not skip)


# -- SS101: accumulate on the device ---------------------------------------------------------------
def _accumulate_on_device(diag: Diagnostic, src: Source) -> Fix | None:
    call = src.at(diag, ast.Call)
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "item"
            and not call.args and not call.keywords):
        return None
    stmt = src.statement_of(call)
    if not (isinstance(stmt, ast.AugAssign) and stmt.value is call and isinstance(stmt.op, (ast.Add, ast.Sub))
            and isinstance(stmt.target, ast.Name)):
        return None
    loop = src.enclosing(stmt, _LOOPS)
    if loop is None:
        return None
    name = stmt.target.id
    if any(_loads_name(part, name, stmt.target) for part in [*loop.body, *loop.orelse] if part is not stmt) \
            or isinstance(loop, ast.While) and _loads_name(loop.test, name, stmt.target):
        return None  # the value is used in the step: it has to be read there
    on_device = _device_sum_term(src, call.func.value, _initial_value(src, loop, name))
    if on_device is None:
        return None
    detach = Edit(*src.span(call), on_device)
    read_once = src.after(loop, src.indent(loop.lineno),
                          f"{name} = {name}.item() if hasattr({name}, \"item\") else {name}  # one read-back, after the loop")
    return Fix(f"Accumulate on the device; read {name} once after the loop", (detach, read_once))


def _initial_value(src: Source, loop: ast.stmt, name: str) -> object:
    """The number `name` is set to last before `loop` in the loop's scope (`total = 0.0`), or None."""
    scope = src.enclosing(loop, (ast.FunctionDef, ast.AsyncFunctionDef)) or src.tree
    found = None
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and node.lineno < loop.lineno and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name \
                and (found is None or node.lineno > found.lineno):
            found = node
    if found is None or not isinstance(found.value, ast.Constant):
        return None
    value = found.value.value
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _device_sum_term(src: Source, tensor: ast.expr, start: object) -> str | None:
    """What to add instead of `tensor.item()` so that the sum on the device is the number Python
    would have summed: a float is added in float64 (`.item()` gives a Python float, a double), an
    integer or a bool stays an integer. None when the tensor's kind cannot be told or the start is
    not a plain number."""
    code = src.segment(tensor)
    if code is None or start is None:
        return None
    if isinstance(start, float):  # float + anything is a float: a double on the device too
        return f"{code}.detach().double()"
    if _counts(tensor):  # `(pred == y).sum()`: an integer
        return f"{code}.detach()"
    if isinstance(tensor, (ast.Name, ast.Attribute)):  # reading it twice costs nothing
        return f"({code}.detach().double() if {code}.is_floating_point() else {code}.detach())"
    return None


def _counts(node: ast.expr) -> bool:
    """`(a == b).sum()`, `mask.sum()` of a comparison, `.count_nonzero()`: an integer tensor."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args
            and not node.keywords):
        return False
    if node.func.attr == "count_nonzero":
        return True
    return node.func.attr == "sum" and isinstance(node.func.value, ast.Compare)


# -- SS201: synchronise before each clock read -----------------------------------------------------
def _is_clock(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call) or node.args:
        return False
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr in _CLOCKS and isinstance(func.value, ast.Name)
            and func.value.id == "time") or (isinstance(func, ast.Name) and func.id in _CLOCKS - {"time"})


def _clock_assignment(src: Source, scope_body: list[ast.stmt], name: str, before: int) -> ast.stmt | None:
    """The last statement `name = <clock>()` in `scope_body` (at any depth) before line `before`."""
    found = None
    for stmt in scope_body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Assign) and node.lineno < before and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name and _is_clock(node.value):
                if found is None or node.lineno > found.lineno:
                    found = node
    return found


def _synchronise_clock_reads(diag: Diagnostic, src: Source) -> Fix | None:
    if not src.imports_torch():
        return None
    duration = src.at(diag, ast.BinOp)
    if not (isinstance(duration, ast.BinOp) and isinstance(duration.op, ast.Sub)
            and isinstance(duration.right, ast.Name)):
        return None
    here = src.statement_of(duration)
    scope = src.enclosing(here, (ast.FunctionDef, ast.AsyncFunctionDef)) or src.tree
    start = _clock_assignment(src, scope.body, duration.right.id, here.lineno)
    if _is_clock(duration.left):
        end = here
    elif isinstance(duration.left, ast.Name):
        end = _clock_assignment(src, scope.body, duration.left.id, here.lineno + 1)
    else:
        return None
    if start is None or end is None or start is end:
        return None
    statements = sorted({start, end}, key=lambda s: s.lineno)
    if not all(src.starts_its_line(s) for s in statements) or \
            any(src.lines[s.lineno - 1].rstrip().endswith(":") for s in statements):
        return None
    edits = tuple(Edit(s.lineno, 0, s.lineno, 0, f"{src.indent(s.lineno)}{SYNC}\n") for s in statements)
    return Fix("Synchronise the device before each clock read", edits)


# -- SS402: add a schedule -------------------------------------------------------------------------
def _profiled_loop(with_node: ast.With) -> tuple[ast.Call, str, ast.stmt] | None:
    for item in with_node.items:
        call = item.context_expr
        if isinstance(call, ast.Call) and isinstance(item.optional_vars, ast.Name) and (
                (isinstance(call.func, ast.Name) and call.func.id == "profile")
                or (isinstance(call.func, ast.Attribute) and call.func.attr == "profile")):
            loops = [s for s in with_node.body if isinstance(s, _LOOPS)]
            if len(loops) == 1:
                return call, item.optional_vars.id, loops[0]
    return None


def _runs_at_least(loop: ast.stmt, steps: int) -> bool:
    """False only when the loop is `for … in range(N)` with a constant N below `steps`."""
    if isinstance(loop, ast.For) and isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Name) \
            and loop.iter.func.id == "range" and len(loop.iter.args) == 1 and isinstance(loop.iter.args[0], ast.Constant):
        count = loop.iter.args[0].value
        return not isinstance(count, int) or count >= steps
    return True


def _continues(loop: ast.stmt) -> bool:
    """A `continue` of this loop (not of a loop inside it) would skip the step's end."""
    todo = list(loop.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Continue):
            return True
        if isinstance(node, (*_LOOPS, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return False


def _steps_profiler(loop: ast.stmt, name: str) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "step"
               and isinstance(n.func.value, ast.Name) and n.func.value.id == name for n in ast.walk(loop))


def _add_schedule(diag: Diagnostic, src: Source) -> Fix | None:
    if not src.imports_torch():
        return None
    with_node = next((n for n in ast.walk(src.tree) if isinstance(n, ast.With) and n.lineno == diag.line), None)
    found = _profiled_loop(with_node) if with_node is not None else None
    if found is None:
        return None
    call, name, loop = found
    if not _runs_at_least(loop, SCHEDULE_STEPS) or _continues(loop) or _steps_profiler(loop, name) or \
            any(k.arg == "schedule" for k in call.keywords) or loop.orelse:
        return None
    if call.args or call.keywords:  # after the last argument (a trailing comma, a comment stay after it)
        line, col = max((n.end_lineno, n.end_col_offset) for n in [*call.args, *(k.value for k in call.keywords)])
        add = Edit(line, col, line, col, f", schedule={SCHEDULE}")
    else:  # inside the empty parentheses
        add = Edit(call.end_lineno, call.end_col_offset - 1, call.end_lineno, call.end_col_offset - 1,
                   f"schedule={SCHEDULE}")
    body_indent = src.indent(loop.body[0].lineno)
    step = src.after(loop, body_indent, f"{name}.step()  # the schedule moves on once per step")
    return Fix(f"Add a schedule ({SCHEDULE_WORDS}) and step it every iteration", (add, step))


_BUILDERS = {
    "SS101": _accumulate_on_device,
    "SS201": _synchronise_clock_reads,
    "SS402": _add_schedule,
    "SS501": constant_fix,
}
