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
import functools
import re
from dataclasses import dataclass, field, replace
from typing import Iterable, Iterator

from ..source.loops import (
    BACKWARD,
    MODEL,
    OPTIMIZER,
    PROFILER,
    Loop,
    call_signal,
    find_loops,
    is_model_name,
    is_range_like,
    iter_own_nodes,
    iter_statements,
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
# Helpers that train: a loop calling one is a training loop even when its own body shows no
# backward or optimizer step (`self.run_backward(loss)`, `self.manual_backward(loss)`,
# `optim_wrapper.update_params(loss)`, which runs backward and the optimizer step).
_TRAINING_CALL = re.compile(
    r"backward|(^|_)optim(izer)?_?step$|^step_optimi[sz]er|(^|_)(train|training)_(step|batch"
    r"|iter|iteration|one_step|on_batch)$|^train_one_step$|^update_params$", re.IGNORECASE)
_STEP_HELPER = re.compile(
    r"(^|_)(run_forward|run_backward|forward_step|backward_step|forward_backward\w*"
    r"|optimi[sz]er_step|optim_step|step_optimi[sz]er|(train|training|eval|predict|inference)"
    r"_step)$", re.IGNORECASE)
# Literal parts of those names: a file holding none of them has no such loop (`in` on the text
# is much faster than a regular expression with alternatives).
_STEP_HELPER_WORDS = ("run_forward", "run_backward", "forward_step", "backward_step",
                      "forward_backward", "optim_step", "optimizer_step", "optimiser_step",
                      "step_optimi", "train_step", "training_step", "eval_step", "predict_step",
                      "inference_step")
# Most of those words hold "_step": one scan of the text rules them all out (an edit's check in the
# editor runs this over the whole file).
_STEP_WORDS = tuple(w for w in _STEP_HELPER_WORDS if "_step" in w)
_OTHER_STEP_WORDS = tuple(w for w in _STEP_HELPER_WORDS if "_step" not in w)


_GRAD_OFF = frozenset({"no_grad", "inference_mode"})


def _turns_grad_off(expr: ast.expr) -> bool:
    """`torch.no_grad()`, `torch.inference_mode()`, `@torch.no_grad` (not `no_grad(False)`...
    `inference_mode(mode=False)`, which leave gradients on)."""
    call = expr if isinstance(expr, ast.Call) else None
    name = terminal_name(call.func if call is not None else expr)
    if name not in _GRAD_OFF:
        return False
    if call is not None and any(isinstance(a, ast.Constant) and a.value is False
                                for a in [*call.args, *(k.value for k in call.keywords)]):
        return False
    return True


def _is_training_call(call: ast.Call) -> bool:
    """A call whose name says it trains (`train_step(...)`, `self.run_backward(loss)`), unless
    it is told to run forward only (`forward_backward_func(..., forward_only=True)`)."""
    if not _TRAINING_CALL.search(terminal_name(call.func) or ""):
        return False
    return not any(k.arg == "forward_only" and isinstance(k.value, ast.Constant)
                   and k.value.value is True for k in call.keywords)


def _mentions_step_helper(text: str) -> bool:
    return ("_step" in text and any(w in text for w in _STEP_WORDS)) or any(
        w in text for w in _OTHER_STEP_WORDS)


SHORT_LOOP = 10
_UNSEEN = object()
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


@dataclass(slots=True)
class Scope:
    """Where a node sits. `loops` holds the enclosing loops of the same function, innermost last.

    `infrequent`: inside the innermost step loop, a guard keeps the node from running every step
    (`if step % 100 == 0:`, `if args.debug:`, `if i == 0:`, a block that ends in `break`, `return`
    or `raise`, an `except` handler). `accumulation`: the guard is the optimizer step of gradient
    accumulation (`if (i + 1) % accum == 0:` around `optimizer.step()`), which runs every batch
    when accumulation is 1. `test`: inside a test function (`test_*`) or a `Test*` class.
    """

    function: FunctionNode
    loops: tuple[Loop, ...]
    infrequent: bool
    accumulation: bool = False
    test: bool = False
    outer_infrequent: bool = False  # a guard around an enclosing step loop

    def guarded(self, kind: str | None) -> "Scope":
        """The scope of a block under a guard of `kind` (see `guard_kind`)."""
        if kind in ("periodic", "rare") and not self.infrequent:
            return replace(self, infrequent=True)
        if kind == "accumulation" and not (self.infrequent or self.accumulation):
            return replace(self, accumulation=True)
        return self

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
    loops: list[ast.For | ast.AsyncFor | ast.While] = field(default_factory=list)  # own and nested


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
    syncing_functions: frozenset[str] = frozenset()
    sync_facts: tuple = ()  # `function_sync_facts` of every function, for incremental updates
    host_reading_helpers: frozenset[str] = frozenset()  # see `helper_reads`


@dataclass
class ModuleContext:
    tree: ast.Module
    lines: list[str]
    loops: list[Loop]
    loop_by_pos: dict[tuple[int, int], Loop]
    calls: list[tuple[ast.Call, Scope]]
    ifs: list[tuple[ast.If | ast.While | ast.IfExp, Scope]]
    profile_withs: list[tuple[ast.With | ast.AsyncWith, ast.Call, Scope]]
    named_withs: list[tuple[ast.With | ast.AsyncWith, Scope]]  # `with prof:`: an item is a name
    functions: dict[int, FunctionFacts]  # id(function node) -> facts
    imports: dict[str, str]  # local name -> dotted origin ("time.time", "torch.profiler.profile")
    mentions_cuda: bool
    model_names: frozenset[str]
    text: str = ""
    other_framework: bool = False  # imports TensorFlow, JAX, ... and not torch
    loop_nodes: list[LoopNode] = field(default_factory=list)
    assigns: list[ast.Assign | ast.AugAssign | ast.AnnAssign] = field(default_factory=list)
    stores: list[tuple[int, str]] = field(default_factory=list)  # (line, name) of every binding
    functions_defs: list[ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=list)
    # (first line, last line) of `with torch.no_grad():` blocks and functions decorated with it
    grad_off_spans: list[tuple[int, int]] = field(default_factory=list)
    _assigned: dict[str, list[ast.expr]] | None = None
    summary: ModuleSummary | None = None
    # node -> `dotted(node)`, once the imports are all known (after the walk; see `build`)
    _dotted_memo: dict[ast.AST, str | None] | None = None

    def calls_named(self, name: str) -> list[tuple[ast.Call, "Scope"]]:
        """The calls whose callee's `terminal_name` is `name`, in the order of `calls`."""
        index = self.__dict__.get("_calls_by_name")
        if index is None:
            index = {}
            for item in self.calls:
                index.setdefault(terminal_name(item[0].func), []).append(item)
            self.__dict__["_calls_by_name"] = index
        return index.get(name, [])

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

    def syncing_functions(self) -> frozenset[str]:
        """Names of the functions and methods of this module that read a value on the host
        (`.item()`, `.cpu()`, ... or `torch.cuda.synchronize()`), directly or through another
        one of them: calling one of them waits for the device."""
        if self.summary is not None:
            return self.summary.syncing_functions
        cached = self.__dict__.get("_syncing_functions")
        if cached is None:
            cached = self.__dict__["_syncing_functions"] = syncing_names(
                function_sync_facts(self.functions_defs))
        return cached

    # ---- loops -------------------------------------------------------------------------------
    def _small_int(self, node: ast.expr) -> int | None:
        """An int written in the source: a literal, or a name only ever set to one."""
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            values = self.assigned_values().get(node.id, [])
            if values and all(isinstance(v, ast.Constant) and isinstance(v.value, int)
                              and not isinstance(v.value, bool) for v in values):
                return max(v.value for v in values)  # type: ignore[attr-defined]
        return None

    def loop_role(self, loop: Loop) -> str:
        """What a step loop does: "training" (backward, an optimizer step or a training-step
        helper runs in it), "profiled" (it advances a profiler and does not train) or
        "evaluation" (it runs a model only: evaluation or inference)."""
        roles = self.__dict__.setdefault("_loop_roles", {})
        key = (loop.line, loop.col)
        if key not in roles:
            if BACKWARD in loop.contains or OPTIMIZER in loop.contains or (
                    not self.runs_without_grad(loop) and any(
                        _is_training_call(call)
                        for call, _scope in self.calls_between(loop.line, loop.end_line))):
                roles[key] = "training"
            elif PROFILER in loop.contains:
                roles[key] = "profiled"
            else:
                roles[key] = "evaluation"
        return roles[key]

    def runs_without_grad(self, loop: Loop) -> bool:
        """The loop sits in a `with torch.no_grad():` / `torch.inference_mode()` block or in a
        function decorated with one: nothing in it trains (a decoding loop, an evaluation)."""
        return any(first <= loop.line <= last for first, last in self.grad_off_spans)

    def runs_steps(self, loop: Loop) -> bool:
        """The loop runs training or inference steps: a step loop (one that calls step helpers
        included, see `_with_step_helpers`) or a loop with one inside."""
        return loop.is_step or bool(loop.contains)

    def loop_node(self, loop: Loop) -> LoopNode | None:
        nodes = self.__dict__.get("_loop_nodes_by_pos")
        if nodes is None:
            nodes = self.__dict__["_loop_nodes_by_pos"] = {
                (n.lineno, n.col_offset): n for n in self.loop_nodes}
        return nodes.get((loop.line, loop.col))

    def is_short_loop(self, loop: Loop) -> bool:
        """`for _ in range(3):`, `for cfg in [a, b, c]:` — at most `SHORT_LOOP` iterations written
        in the source: a warm-up, a check, a sweep over settings, not a step that repeats."""
        cache = self.__dict__.setdefault("_short_loops", {})
        key = (loop.line, loop.col)
        if key not in cache:
            cache[key] = self._is_short_loop(loop)
        return cache[key]

    def repeated_step_loop(self, scope: Scope) -> Loop | None:
        """The innermost step loop around `scope` when it repeats: a long one, or a short one
        (`for i in range(1):`) inside a longer loop (`for epoch in range(num_epochs):`), unless a
        guard between them keeps it to a few passes."""
        step: Loop | None = None
        for loop in reversed(scope.loops):
            if step is None:
                if loop.is_step:
                    if not self.is_short_loop(loop):
                        return loop
                    step = loop
            elif not self.is_short_loop(loop):
                return None if scope.outer_infrequent else step
        return None

    def _is_short_loop(self, loop: Loop) -> bool:
        node = self.loop_node(loop)
        if not isinstance(node, (ast.For, ast.AsyncFor)):
            return False
        it = node.iter
        if isinstance(it, (ast.List, ast.Tuple)):  # `for cfg in [(1, 32), (2, 64)]:` a sweep
            return len(it.elts) <= SHORT_LOOP
        if not (isinstance(it, ast.Call) and terminal_name(it.func) == "range" and it.args
                and not it.keywords and len(it.args) <= 2):
            return False
        bounds = [self._small_int(a) for a in it.args]
        if any(not isinstance(b, int) or isinstance(b, bool) for b in bounds):
            return False
        count = bounds[0] if len(bounds) == 1 else bounds[1] - bounds[0]  # type: ignore[operator]
        return count <= SHORT_LOOP

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
        memo = getattr(self, "_dotted_memo", None)
        if memo is not None:
            found = memo.get(node, _UNSEEN)
            if found is not _UNSEEN:
                return found  # type: ignore[return-value]
        key = node
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            result = None
        else:
            parts.append(self.imports.get(node.id, node.id))
            result = ".".join(reversed(parts))
        if memo is not None:
            memo[key] = result
        return result

    def is_tensor_expr(self, node: ast.AST, facts: FunctionFacts) -> bool:
        return is_tensor_expr(node, facts.tensor_names, self)

    def facts_for(self, scope: Scope) -> FunctionFacts:
        return self.functions[id(scope.function)]

    def is_torch_profile_call(self, call: ast.Call) -> str | None:
        """"torch.profiler" / "autograd" for a profiler constructor call, else None."""
        func = call.func  # the last name must be `profile`: most calls are ruled out by it alone
        if not (func.attr == "profile" if type(func) is ast.Attribute else type(func) is ast.Name
                and self.imports.get(func.id, func.id).endswith(".profile")):  # type: ignore[attr-defined]
            return None
        name = self.dotted(func)
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
        if _mentions_step_helper(text):
            loops = _with_step_helpers(tree, loops)
        ctx = cls(
            tree=tree,
            lines=source_lines(text),
            loops=loops,
            loop_by_pos={(lp.line, lp.col): lp for lp in loops},
            calls=[],
            ifs=[],
            profile_withs=[],
            named_withs=[],
            functions={},
            imports=dict(summary.imports) if summary else {},
            mentions_cuda="cuda" in text,
            model_names=models,
            text=text,
            other_framework=uses_other_framework(text),
            summary=summary,
        )
        if summary is not None:
            ctx._assigned = summary.assigned
        _Walker(ctx).run()
        ctx._dotted_memo = {}  # the imports no longer change: names can be resolved once each
        for facts in ctx.functions.values():
            _infer_tensor_names(facts, ctx)
        return ctx


_OTHER_FRAMEWORK = re.compile(
    r"^[ \t]*(?:import|from)[ \t]+(tensorflow|jax|flax|paddle|mxnet|keras|oneflow|mindspore)\b",
    re.MULTILINE)
_OTHER_FRAMEWORK_WORDS = ("tensorflow", "jax", "paddle", "mxnet", "keras", "oneflow", "mindspore")
_TORCH_IMPORT = re.compile(r"^[ \t]*(?:import|from)[ \t]+torch\b", re.MULTILINE)


@functools.lru_cache(maxsize=2)  # asked twice of the same text by each editor check
def uses_other_framework(text: str) -> bool:
    """The module imports another array framework (TensorFlow, JAX, ...) and not torch: its
    `.numpy()` and `.item()` are that framework's, which the rules do not model."""
    return any(word in text for word in _OTHER_FRAMEWORK_WORDS) \
        and bool(_OTHER_FRAMEWORK.search(text)) and not _TORCH_IMPORT.search(text)


STEP_HELPER = "calls step helpers"


def _with_step_helpers(tree: ast.Module, loops: list[Loop]) -> list[Loop]:
    """`find_loops` with one more kind of step loop: a loop whose own body calls helpers that run
    a step (`self.run_forward(batch)`, `self.run_backward(loss)`, `self.optimizer_step()`) and
    holds no other step loop."""
    candidates = {(lp.line, lp.col): i for i, lp in enumerate(loops)
                  if not lp.is_step and not lp.contains}
    if not candidates:
        return loops
    out = list(loops)
    for stmt in iter_statements(tree.body):
        if not isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            continue
        index = candidates.get((stmt.lineno, stmt.col_offset))
        if index is None:
            continue
        if any(isinstance(n, ast.Call) and _STEP_HELPER.search(terminal_name(n.func) or "")
               for n in iter_own_nodes(stmt.body)):
            loop = out[index]
            out[index] = replace(loop, is_step=True, reasons=(*loop.reasons, STEP_HELPER),
                                 contains=(*loop.contains, STEP_HELPER))
    return out


def _add_import(names: dict[str, str], node: ast.Import | ast.ImportFrom) -> None:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                names[alias.asname] = alias.name
    elif node.module and node.level == 0:
        for alias in node.names:
            names[alias.asname or alias.name] = f"{node.module}.{alias.name}"


_PROFILER_MODULES = ("torch.profiler", "torch.autograd.profiler")


def _note_profiler_alias(ctx: ModuleContext, node: ast.Assign, aliases: set[str]) -> None:
    """`profile_fn = profile`, `tp = torch.profiler` at module level: the name then resolves as
    an import of what it names does, so the profiler rules see `with profile_fn(...)`. Only torch's
    profiler is followed (a name bound to anything else keeps its meaning), and a module-level
    rebinding to something else forgets the alias. Module-level code only: an edit there is
    always checked whole, so the editor's partial checks never see a stale alias."""
    origin = None
    if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
            and isinstance(node.value, (ast.Name, ast.Attribute)):
        name = ctx.dotted(node.value)
        if name and any(name == m or name.startswith(m + ".") for m in _PROFILER_MODULES):
            origin = name
    for target in node.targets:
        if not isinstance(target, ast.Name):
            continue
        if origin is not None:
            ctx.imports[target.id] = origin
            aliases.add(target.id)
        elif target.id in aliases:
            del ctx.imports[target.id]
            aliases.discard(target.id)


_PERIODIC_NAME = re.compile(
    r"(should|every|is_log|log_step|is_print|do_log|do_eval|do_save|divisible)")
# A bound that makes a comparison fire now and then: `step - last_eval >= eval_interval`.
_INTERVAL_NAME = re.compile(r"(interval|every|freq)", re.IGNORECASE)


def _periodic_parts(test: ast.expr) -> Iterator[ast.AST]:
    """The parts of a test that make it hold every N steps: `% N`, `should_log()`,
    `divisible_by(i, N)`, a comparison with an interval, a flag set from one earlier."""
    for node in ast.walk(test):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            yield node
        elif isinstance(node, ast.Call):
            if _PERIODIC_NAME.search(terminal_name(node.func) or ""):
                yield node
        elif isinstance(node, (ast.Name, ast.Attribute)) and _PERIODIC_NAME.match(
                node.id if isinstance(node, ast.Name) else node.attr):
            yield node  # `should_test = (step + 1) % freq == 0` set earlier
        elif isinstance(node, ast.Compare) and any(
                isinstance(op, (ast.Gt, ast.GtE, ast.Lt, ast.LtE)) for op in node.ops) and any(
                isinstance(o, (ast.Name, ast.Attribute))
                and _INTERVAL_NAME.search(o.id if isinstance(o, ast.Name) else o.attr)
                for o in (node.left, *node.comparators)):
            yield node


def _is_periodic_test(test: ast.expr) -> bool:
    return next(_periodic_parts(test), None) is not None


_ACCUMULATION = re.compile(r"accum|grad_acc|update_freq|(^|_)ga(_|$)", re.IGNORECASE)
# Flags that turn on occasional work (`if args.debug:`, `if self.verbose:`, `if print_loss:`).
_RARE_FLAG_PARTS = frozenset({"debug", "verbose", "dump", "plot", "visualize", "vis", "show",
                              "profile", "profiling", "trace", "first", "last", "final"})
_COUNTER_PARTS = frozenset({"i", "j", "k", "n", "step", "steps", "idx", "index", "iter", "it",
                            "iteration", "itr", "epoch", "batch", "count", "counter", "num"})
_NAME_PARTS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def _flag_parts(node: ast.AST) -> list[str]:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(
        node, ast.Attribute) else ""
    return [p.lower() for p in _NAME_PARTS.findall(name)]


def _is_rare_test(test: ast.expr) -> bool:
    """A test that holds on few steps: `i == 0`, `args.debug`, `self.verbose and ...`."""
    if isinstance(test, ast.BoolOp):
        parts = [_is_rare_test(v) for v in test.values]
        return any(parts) if isinstance(test.op, ast.And) else all(parts)
    if isinstance(test, ast.Compare):
        # `step == 0`, `batch_idx == 10` (not `rank == 0`: that runs every step on one rank)
        operands = [test.left, *test.comparators]
        return all(isinstance(op, ast.Eq) for op in test.ops) and any(
            isinstance(c, ast.Constant) and isinstance(c.value, int)
            and not isinstance(c.value, bool) for c in operands) and any(
            set(_flag_parts(c)) & _COUNTER_PARTS for c in operands)
    if isinstance(test, (ast.Name, ast.Attribute)):
        parts = _flag_parts(test)
        return bool(parts) and (parts[0] == "print" or any(p in _RARE_FLAG_PARTS for p in parts))
    return False


def runs_once(block: list[ast.stmt]) -> bool:
    """The block leaves the loop (or the function) when it runs: it runs at most once."""
    return bool(block) and isinstance(block[-1], (ast.Break, ast.Return, ast.Raise))


def guard_kind(test: ast.expr, body: list[ast.stmt] | None = None) -> str | None:
    """How often a block guarded by `test` runs inside a step loop: "periodic" (`% N`, a
    `should_log()`), "accumulation" (a `%` guard around the optimizer step, or naming
    accumulation), "rare" (`i == 0`, a debug flag, a block that leaves the loop) or None."""
    parts = list(_periodic_parts(test))
    if parts:
        # `(step + 1) % accumulation_steps == 0` guards the optimizer step; in
        # `not is_accumulating and step % eval_interval == 0` the period is the evaluation's.
        if any(_ACCUMULATION.search(name) for part in parts for name in _names_in(part)):
            return "accumulation"
        return "periodic"
    if _is_rare_test(test) or (body is not None and runs_once(body)):
        return "rare"
    return None


def _names_in(node: ast.AST) -> Iterator[str]:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            yield sub.id
        elif isinstance(sub, ast.Attribute):
            yield sub.attr


class _Walker:
    """One pass over the tree that fills the context's indexes (calls, ifs, assignments, loops,
    bindings, imports, `with` items). Profiler `with` statements are picked out after the pass,
    once every import is known."""

    def __init__(self, ctx: ModuleContext):
        self.ctx = ctx
        self.withs: list[tuple[ast.With | ast.AsyncWith, ast.Call, Scope]] = []
        self.aliases: set[str] = set()  # module-level names `_note_profiler_alias` added to imports

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
        kind = type(node)
        if kind is ast.Expr or kind is ast.Return:  # the most common statements: one expression
            if node.value is not None:  # type: ignore[attr-defined]
                self.scan(node.value, scope)  # type: ignore[attr-defined]
            return
        if isinstance(node, ast.expr):
            self.scan(node, scope)
            return
        ctx = self.ctx
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            ctx.assigns.append(node)
            ctx.functions[id(scope.function)].assigns.append(node)
            if ctx.summary is None and scope.function is ctx.tree and isinstance(node, ast.Assign):
                _note_profiler_alias(ctx, node, self.aliases)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if ctx.summary is None:
                _add_import(ctx.imports, node)
            return
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            ctx.stores.append((node.lineno, node.name))
            ctx.functions_defs.append(node)
            if any(_turns_grad_off(d) for d in node.decorator_list):
                ctx.grad_off_spans.append((node.lineno, node.end_lineno or node.lineno))
            for deco in node.decorator_list:
                self.scan(deco, scope)
            for default in node.args.defaults + [d for d in node.args.kw_defaults if d]:
                self.scan(default, scope)
            ctx.functions[id(node)] = FunctionFacts(node)
            test = scope.test or node.name.startswith("test")
            # A function defined in a step and run there every step (called, or handed to a call as
            # `optimizer.step(closure)` is) runs in the step: its body keeps the step's loops.
            runs_in_step = not scope.infrequent and _run_in_step(node, scope, ctx)
            self.visit_block(node.body, replace(scope, function=node, test=test) if runs_in_step
                             else Scope(node, (), False, test=test))
            return
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            ctx.loop_nodes.append(node)
            ctx.functions[id(scope.function)].loops.append(node)
            loop = ctx.loop_by_pos.get((node.lineno, node.col_offset))
            if isinstance(node, ast.While):
                ctx.ifs.append((node, scope))
                self.scan(node.test, scope)
            else:
                self.scan(node.target, scope)
                self.scan(node.iter, scope)
            inner = scope
            if loop is not None:
                if loop.is_step:
                    inner = Scope(scope.function, scope.loops + (loop,), False, test=scope.test,
                                  outer_infrequent=scope.infrequent or scope.outer_infrequent)
                else:
                    inner = replace(scope, loops=scope.loops + (loop,))
            self.visit_block(node.body, inner)
            self.visit_block(node.orelse, scope)
            return
        elif isinstance(node, ast.If):
            ctx.ifs.append((node, scope))
            if scope.loops and not scope.infrequent:  # a guard only matters inside a loop
                self.scan_guard_test(node.test, scope)
                kind = guard_kind(node.test, node.body) or self.flag_kind(node.test, scope)
                self.visit_block(node.body, scope.guarded(kind))
                self.visit_block(node.orelse,
                                 scope.guarded("rare" if runs_once(node.orelse) else None))
            else:
                self.scan(node.test, scope)
                self.visit_block(node.body, scope)
                self.visit_block(node.orelse, scope)
            return
        elif isinstance(node, ast.Assert):
            ctx.ifs.append((node, scope))
            self.scan(node.test, scope)
            if node.msg is not None:
                self.scan(node.msg, scope.guarded("rare"))  # built only when the assert fails
            return
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            self.visit_block(node.body, scope)
            for handler in node.handlers:  # runs when something failed: not every step
                if handler.type is not None:
                    self.scan(handler.type, scope)
                self.visit_block(handler.body, scope.guarded("rare"))
            self.visit_block(node.orelse, scope)
            self.visit_block(node.finalbody, scope)
            return
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            if any(_turns_grad_off(item.context_expr) for item in node.items):
                ctx.grad_off_spans.append((node.lineno, node.end_lineno or node.lineno))
            for item in node.items:
                self.scan(item.context_expr, scope)
                if item.optional_vars is not None:
                    self.scan(item.optional_vars, scope)
                expr = item.context_expr
                if isinstance(expr, ast.Name) and not (
                        ctx.named_withs and ctx.named_withs[-1][0] is node):
                    ctx.named_withs.append((node, scope))
                # `with (profile(...) if enabled else nullcontext()) as prof:` profiles too
                for option in ([expr.body, expr.orelse] if isinstance(expr, ast.IfExp) else [expr]):
                    if isinstance(option, ast.Call):
                        self.withs.append((node, option, scope))
            self.visit_block(node.body, scope)
            return
        elif isinstance(node, ast.ClassDef):
            for expr in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
                self.scan(expr, scope)
            if node.name.startswith("Test") and not scope.test:
                scope = replace(scope, test=True)
            self.visit_block(node.body, scope)
            return
        for child in reversed(_children(node)):
            self.visit(child, scope)

    def scan_guard_test(self, test: ast.expr, scope: Scope) -> None:
        """Scan a test inside a loop (of an `if`, a conditional expression, or any `and`). In
        `a and b`, `b` runs only when `a` holds, so the operands after a periodic or rare one
        (`step % 100 == 0 and loss.item() > 10`) are scanned under that guard, as a block is."""
        if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)):
            self.scan(test, scope)
            return
        for value in test.values:
            self.scan(value, scope)
            scope = scope.guarded(guard_kind(value) or self.flag_kind(value, scope))

    def flag_kind(self, test: ast.expr, scope: Scope) -> str | None:
        """"periodic" for a name set only from periodic tests earlier in the function
        (`log_now = step % log_every == 0` ... `if log_now:`), else None."""
        if not isinstance(test, ast.Name):
            return None
        values = [a.value for a in self.ctx.functions[id(scope.function)].assigns
                  if isinstance(a, ast.Assign) and a.value is not None
                  and any(isinstance(t, ast.Name) and t.id == test.id for t in a.targets)]
        if values and all(_is_periodic_test(v) for v in values):
            return "periodic"
        return None

    def scan(self, root: ast.expr, scope: Scope) -> None:
        """Record the calls, bindings and subtractions of one expression, iteratively (the hot
        path: most nodes of a module are expressions, so the common ones are taken apart here
        rather than through `_children`)."""
        ctx = self.ctx
        facts = ctx.functions[id(scope.function)]
        calls, own_calls, stores, subtractions = (ctx.calls.append, facts.calls.append,
                                                  ctx.stores.append, facts.subtractions.append)
        stack: list[ast.AST] = [root]
        pop, push, extend = stack.pop, stack.append, stack.extend
        fields_of = _SCAN_FIELDS
        while stack:
            node = pop()
            kind = type(node)
            if kind is _Name:
                if type(node.ctx) is not _Load:  # type: ignore[attr-defined]
                    stores((node.lineno, node.id))  # type: ignore[attr-defined]
                continue
            if kind is _Constant:
                continue
            if kind is _Attribute:
                push(node.value)  # type: ignore[attr-defined]
                continue
            if kind is _Call:
                calls((node, scope))
                own_calls(node)
                keywords = node.keywords  # type: ignore[attr-defined]
                if keywords:
                    extend([k.value for k in reversed(keywords)])
                args = node.args  # type: ignore[attr-defined]
                if args:
                    extend(args[::-1])
                push(node.func)  # type: ignore[attr-defined]
                continue
            if kind is _BinOp:
                if type(node.op) is _Sub:  # type: ignore[attr-defined]
                    subtractions(node)
                push(node.right)  # type: ignore[attr-defined]
                push(node.left)  # type: ignore[attr-defined]
                continue
            if kind is _Lambda:
                # A lambda runs later, elsewhere: its calls are not part of the enclosing loop.
                self.scan(node.body, Scope(scope.function, (), False,  # type: ignore[attr-defined]
                                           test=scope.test))
                continue
            if kind is _BoolOp and type(node.op) is ast.And and scope.loops \
                    and not scope.infrequent:  # type: ignore[attr-defined]
                self.scan_guard_test(node, scope)  # `i % n == 0 and x.item()`: a guard too
                continue
            if kind is _IfExp:
                ctx.ifs.append((node, scope))  # type: ignore[arg-type]
                if scope.loops:
                    self.scan_guard_test(node.test, scope)  # type: ignore[attr-defined]
                    body_scope = scope.guarded(guard_kind(node.test)  # type: ignore[attr-defined]
                                               or self.flag_kind(node.test, scope))  # type: ignore[attr-defined]
                else:
                    self.scan(node.test, scope)  # type: ignore[attr-defined]
                    body_scope = scope
                self.scan(node.body, body_scope)  # type: ignore[attr-defined]
                self.scan(node.orelse, scope)  # type: ignore[attr-defined]
                continue
            fields = fields_of.get(kind)
            if fields is None:
                fields = fields_of[kind] = tuple(
                    f for f in reversed(kind._fields) if f not in ("ctx", "op", "ops"))
            for name in fields:  # reversed: popped in source order
                value = getattr(node, name, None)
                if value.__class__ is list:
                    extend([v for v in reversed(value) if isinstance(v, ast.AST)])
                elif isinstance(value, ast.AST):
                    push(value)


_Name, _Constant, _Attribute, _Call, _BinOp, _Sub, _Load, _Lambda, _IfExp, _BoolOp = (
    ast.Name, ast.Constant, ast.Attribute, ast.Call, ast.BinOp, ast.Sub, ast.Load, ast.Lambda,
    ast.IfExp, ast.BoolOp)
# Child fields `scan` follows, last first; operators (`op`, `ops`) and `ctx` hold nothing it records.
_SCAN_FIELDS: dict[type, tuple[str, ...]] = {}
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
    if isinstance(node, ast.Attribute):  # `loss.data`, `w.grad`
        return node.attr in ("data", "grad", "T", "mT") \
            and is_tensor_expr(node.value, tensor_names, ctx, depth)
    if isinstance(node, ast.IfExp):
        return is_tensor_expr(node.body, tensor_names, ctx, depth) \
            or is_tensor_expr(node.orelse, tensor_names, ctx, depth)
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
        name = terminal_name(func) or ""
        if _RESULT_CALL.match(name):
            return False  # `train_model(...)`, `evaluate(...)`: a whole run, returning metrics
        if runs_model(node, ctx.model_names):
            return True
        if _LOSS_NAME.search(name) and not name.startswith(("get_", "build_", "make_")):
            return True
    return False


# Calls that run a whole epoch or evaluation and return numbers, whatever their name says.
_RESULT_CALL = re.compile(r"^_*(train|eval|evaluate|validate|valid|test|run|fit)(_|$)",
                          re.IGNORECASE)


def runs_model(call: ast.Call, model_names: frozenset[str] = frozenset()) -> bool:
    """The call runs a model: `model(x)`, `self.net(x)`, `self._ref_model(x)` (not a function
    that does something to a model: `permute_model(m)`, `quantize_model(m)`)."""
    name = terminal_name(call.func) or ""
    if _ACTS_ON_A_MODEL.match(name.lstrip("_")) and name not in model_names:
        return False
    if call_signal(call, model_names=model_names) == MODEL:
        return True
    return name.startswith("_") and not name.startswith("__") and is_model_name(
        name.lstrip("_"), model_names)


_ACTS_ON_A_MODEL = re.compile(
    r"^(permute|quantize|convert|prepare|export|freeze|prune|fuse|shard|wrap|trace|script|print"
    r"|summarize|count|check|validate|benchmark|profile|warmup|warm_up|patch|replace|swap"
    r"|offload|reload|broadcast|sync|average|merge|unwrap|cast|move|apply|reset|restore"
    r"|serialize|dump|log|describe|inspect|calibrate|compress|distill|optimize)_",
    re.IGNORECASE)


def _run_in_step(fn: ast.FunctionDef | ast.AsyncFunctionDef, scope: Scope, ctx: ModuleContext) -> bool:
    """Whether `fn`, defined inside the body of a step loop, is run by that body in every step:
    called by its name, or its name handed to a call (`optimizer.step(closure)`, `checkpoint(fn,
    x)`), outside a guard that keeps it to some steps (`if i % 100 == 0:`, as for any node)."""
    loop = scope.step_loop
    node = ctx.loop_node(loop) if loop is not None else None
    if node is None or isinstance(fn, ast.AsyncFunctionDef):
        return False

    def calls_fn(tree: ast.AST | list) -> bool:
        for part in tree if isinstance(tree, list) else [tree]:
            for n in ast.walk(part) if isinstance(part, ast.AST) else ():
                if not isinstance(n, ast.Call):
                    continue
                if isinstance(n.func, ast.Name) and n.func.id == fn.name:
                    return True
                if any(isinstance(a, ast.Name) and a.id == fn.name for a in (*n.args, *(k.value for k in n.keywords))):
                    return True
        return False

    def every_step(stmts: list[ast.stmt]) -> bool:
        for stmt in stmts:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue  # a definition runs nothing
            if isinstance(stmt, ast.If):
                if calls_fn(stmt.test) or (guard_kind(stmt.test, stmt.body) not in ("periodic", "rare")
                                           and every_step(stmt.body)):
                    return True
                if not runs_once(stmt.orelse) and every_step(stmt.orelse):
                    return True
                continue
            blocks = [b for f in ("body", "orelse", "finalbody") if isinstance(b := getattr(stmt, f, None), list)]
            if not blocks:
                if calls_fn(stmt):
                    return True
                continue
            # a compound statement: its own parts (a loop's iterable, a `with`'s items), then its
            # blocks; an `except` handler runs only when something failed
            heads = [v for f, v in ast.iter_fields(stmt) if f not in ("body", "orelse", "finalbody", "handlers")]
            if any(calls_fn(h) for h in heads) or any(every_step(b) for b in blocks):
                return True
        return False

    return every_step(node.body)


# ---- functions that wait for the device ----------------------------------------------------------
_HOST_READS = frozenset({"item", "cpu", "tolist", "numpy"})


def function_sync_facts(defs: Iterable[ast.FunctionDef | ast.AsyncFunctionDef]
                        ) -> tuple[tuple[str, bool, frozenset[str]], ...]:
    """(name, reads a value on the host itself, names it calls) of each function: all that
    `syncing_names` needs, comparable between two versions of a module."""
    out = []
    for fn in defs:
        direct = False
        called: set[str] = set()
        for node in iter_own_nodes_all(fn.body):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Attribute):
                if (func.attr in _HOST_READS and not node.args) or func.attr == "synchronize":
                    direct = True
                if isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
                    called.add(func.attr)
            elif isinstance(func, ast.Name):
                called.add(func.id)
        out.append((fn.name, direct, frozenset(called)))
    return tuple(sorted(out, key=lambda f: (f[0], f[1], sorted(f[2]))))


def syncing_names(facts: tuple[tuple[str, bool, frozenset[str]], ...]) -> frozenset[str]:
    names = {name for name, direct, _ in facts if direct}
    for _ in range(3):  # helpers of helpers
        grown = names | {name for name, _, called in facts if called & names}
        if grown == names:
            break
        names = grown
    return frozenset(names)


# ---- host values -------------------------------------------------------------------------------
_HOST_RESULTS = frozenset({"numpy", "tolist", "item", "cpu"})
_SAME_PLACE = frozenset({"detach", "clone", "float", "double", "half", "long", "int", "bool",
                         "contiguous", "view", "reshape", "squeeze", "unsqueeze", "flatten",
                         "permute", "transpose", "t", "sum", "mean", "max", "min", "argmax",
                         "argmin", "abs", "round", "copy", "astype", "type_as", "ne", "eq",
                         "gt", "lt", "ge", "le"})
_HOST_FACTORIES = frozenset({"tensor", "as_tensor", "Tensor", "FloatTensor", "LongTensor",
                             "IntTensor", "BoolTensor", "zeros", "ones", "full", "empty", "arange",
                             "rand", "randn", "randint", "from_numpy", "linspace"})


def host_names(facts: FunctionFacts, ctx: ModuleContext) -> frozenset[str]:
    """Names that hold host values (NumPy arrays, Python numbers, CPU tensors) wherever they are
    set in the function: results of `.numpy()`/`.cpu()`/`.item()`, NumPy calls, torch factories
    with no device, and batches a loop takes from a loader and never reassigns (a DataLoader
    yields CPU tensors). Reading such a value waits for no device."""
    cached = getattr(facts, "_host_names", None)
    if cached is not None:
        return cached
    assigned: dict[str, list[ast.expr | None]] = {}
    for node in facts.assigns:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = None if isinstance(node, ast.AugAssign) else node.value
        for target in targets:
            if isinstance(target, (ast.Tuple, ast.List)) and value is not None \
                    and not isinstance(value, (ast.Tuple, ast.List)):
                for name in _target_names(target):
                    assigned.setdefault(name, []).append(value)  # unpacking: same place
            else:
                for name in _target_names(target):
                    assigned.setdefault(name, []).append(value)
    loop_targets: dict[str, list[ast.expr]] = {}
    for node in _own_for_loops(facts.node):  # `for` loops and comprehensions
        source = node.iter
        while isinstance(source, ast.Call) and terminal_name(source.func) in (
                "enumerate", "tqdm", "zip", "iter") and source.args:
            source = source.args[0]
        for name in _target_names(node.target):
            loop_targets.setdefault(name, []).append(source)
    host: set[str] = set()
    for _ in range(3):  # a few passes settle `a = x.numpy(); b = a[0]`
        for name, values in assigned.items():
            assumed = host | {name}  # `x = x[0]` keeps x where it was
            if name not in host and all(v is not None and _is_host_value(v, assumed, ctx)
                                        for v in values) \
                    and all(_is_host_value(s, assumed, ctx) or _is_loader(s, ctx)
                            for s in loop_targets.get(name, [])):
                host.add(name)
        for name, sources in loop_targets.items():
            if name not in host and name not in assigned and all(
                    _is_host_value(s, host, ctx) or _is_loader(s, ctx) for s in sources):
                host.add(name)
    result = frozenset(host)
    facts._host_names = result  # type: ignore[attr-defined]
    return result


def host_here(node: ast.expr, facts: FunctionFacts, ctx: ModuleContext, depth: int = 0) -> bool:
    """Whether `node` holds a host value where it is read: a host value wherever its name is set
    (`host_names`), or a name whose nearest assignment above the read, at the read's depth or
    shallower, sets a host value while none below sets anything else (`loss = loss.item()`
    and then `if loss < best:`); arithmetic of such values stays on the host."""
    host = host_names(facts, ctx)
    if _is_host_value(node, host, ctx):
        return True
    if depth > 3:
        return False
    if isinstance(node, ast.BinOp):
        return host_here(node.left, facts, ctx, depth + 1) and host_here(
            node.right, facts, ctx, depth + 1)
    if isinstance(node, ast.UnaryOp):
        return host_here(node.operand, facts, ctx, depth + 1)
    if isinstance(node, ast.Subscript):  # `batch["x"]`: where `batch` is
        return host_here(node.value, facts, ctx, depth + 1)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in _SAME_PLACE:  # `x.sum()`: where `x` is
        return host_here(node.func.value, facts, ctx, depth + 1)
    if not isinstance(node, ast.Name):
        return False
    if _read_before_moved(node, facts, ctx):
        return True
    line = node.lineno
    text = ctx.lines[line - 1] if 1 <= line <= len(ctx.lines) else ""
    indent = len(text) - len(text.lstrip())
    before: ast.Assign | ast.AnnAssign | None = None
    others: list[ast.Assign | ast.AnnAssign] = []
    for assign in facts.assigns:
        if isinstance(assign, ast.AugAssign) or assign.value is None:
            continue
        targets = assign.targets if isinstance(assign, ast.Assign) else [assign.target]
        if not any(isinstance(t, ast.Name) and t.id == node.id for t in targets):
            continue
        if assign.lineno < line and assign.col_offset <= indent and (
                before is None or assign.lineno > before.lineno):
            before = assign
        if assign.lineno != line:
            others.append(assign)
    if before is None or not host_here(before.value, facts, ctx, depth + 1):
        return False
    # Anything else that sets the name between that assignment and the read (in a branch) or
    # after the read (reaching it on the next pass of a loop) must set a host value too.
    return all(host_here(a.value, facts, ctx, depth + 1)  # type: ignore[arg-type]
               for a in others if a.lineno > before.lineno and a is not before)


def _read_before_moved(node: ast.Name, facts: FunctionFacts, ctx: ModuleContext) -> bool:
    """`node` reads a batch a `for` loop takes from a loader (or another host value) before the
    loop body sets that name again: `n = x.sum().item()` above `x = x.to(device)` reads the CPU
    tensor the loader gave, whatever the later line moves.

    Invariant: True only when, in the innermost such loop around the read, every binding of the
    name in the loop body comes after the read and no nested loop holds both the read and a
    binding (a later pass of that nested loop would read the moved value)."""
    loop = _innermost_host_batch_loop(node, facts, ctx)
    if loop is None:
        return False
    end = loop.end_lineno or loop.lineno
    bindings = [line for line in _bindings_of(facts).get(node.id, ())
                if loop.lineno < line <= end]
    if any(line <= node.lineno for line in bindings):
        return False
    return not any(inner is not loop and inner.lineno > loop.lineno
                   and inner.lineno <= node.lineno <= (inner.end_lineno or inner.lineno)
                   and any(inner.lineno < line <= (inner.end_lineno or inner.lineno)
                           for line in bindings)
                   for inner in facts.loops)


def _innermost_host_batch_loop(node: ast.Name, facts: FunctionFacts, ctx: ModuleContext
                               ) -> ast.For | ast.AsyncFor | None:
    """The innermost `for` loop of the function around `node` whose target binds its name and
    whose iterable yields host values (a loader, after `enumerate`/`tqdm`/`zip`/`iter`)."""
    best = None
    for loop in facts.loops:
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            continue
        if not (loop.lineno < node.lineno <= (loop.end_lineno or loop.lineno)):
            continue
        if node.id not in set(_target_names(loop.target)):
            continue
        if best is None or loop.lineno > best.lineno:
            best = loop
    if best is None:
        return None
    source = best.iter
    while isinstance(source, ast.Call) and terminal_name(source.func) in (
            "enumerate", "tqdm", "zip", "iter") and source.args:
        source = source.args[0]
    if _is_loader(source, ctx) or _is_host_value(source, host_names(facts, ctx), ctx) \
            or _moved_later(node, best, facts):
        return best
    return None


_MOVES = frozenset({"to", "cuda"})


def _moved_later(node: ast.Name, loop: ast.For | ast.AsyncFor, facts: FunctionFacts) -> bool:
    """Below the read, in the same loop, the body moves the batch to the device (`x.to(device)`,
    `batch["x"].cuda()`, `{k: v.to(device) for k, v in batch.items()}`): it arrives on the host."""
    end = loop.end_lineno or loop.lineno
    return any(node.lineno < line <= end for line in _move_lines(facts).get(node.id, ()))


def _move_lines(facts: FunctionFacts) -> dict[str, list[int]]:
    """name -> the lines where the function moves that name's value to a device (computed once
    per function: every read of a batch asks)."""
    cached = facts.__dict__.get("_move_lines")
    if cached is not None:
        return cached
    out: dict[str, list[int]] = {}
    for call in facts.calls:  # (a comprehension's calls are the function's own too)
        if isinstance(call.func, ast.Attribute) and call.func.attr in _MOVES:
            root = _root_name(call.func.value)
            if root is not None:
                out.setdefault(root, []).append(call.lineno)
    moving = [c for c in facts.calls
              if isinstance(c.func, ast.Attribute) and c.func.attr in _MOVES]
    if moving:
        for sub in iter_own_nodes_all(facts.node.body):
            if isinstance(sub, (ast.DictComp, ast.ListComp, ast.GeneratorExp)) and any(
                    sub.lineno <= c.lineno <= (sub.end_lineno or sub.lineno) for c in moving):
                for generator in sub.generators:
                    root = _root_name(generator.iter)
                    if root is not None:
                        out.setdefault(root, []).append(sub.lineno)
    facts.__dict__["_move_lines"] = out
    return out


def _root_name(node: ast.AST) -> str | None:
    """`batch` for `batch`, `batch["x"]`, `batch.x`, `batch.items()`."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, (ast.Subscript, ast.Attribute)):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return None


def _bindings_of(facts: FunctionFacts) -> dict[str, list[int]]:
    """name -> the lines of the function's assignments that bind it (computed once)."""
    cached = facts.__dict__.get("_bindings")
    if cached is not None:
        return cached
    out: dict[str, list[int]] = {}
    for assign in facts.assigns:
        targets = assign.targets if isinstance(assign, ast.Assign) else [assign.target]
        for target in targets:
            for name in _target_names(target):
                out.setdefault(name, []).append(assign.lineno)
    facts.__dict__["_bindings"] = out
    return out


def _target_names(target: ast.expr) -> Iterator[str]:
    """The names an assignment target binds (`a`, `a, (b, *c)`), not attributes or subscripts."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from _target_names(elt)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value)


def _own_for_loops(function: FunctionNode) -> Iterator[ast.For | ast.AsyncFor | ast.comprehension]:
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _is_loader(source: ast.expr, ctx: ModuleContext) -> bool:
    """A name or attribute that reads like a data loader (`loader`, `train_dataloader`,
    `self.val_loader`, `data_iter`)."""
    parts = _flag_parts(source) if isinstance(source, (ast.Name, ast.Attribute)) else []
    return any("loader" in p for p in parts) or "dl" in parts or "ld" in parts


def _is_host_value(node: ast.AST, host: set[str], ctx: ModuleContext) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return node.id in host
    if isinstance(node, (ast.Subscript, ast.Starred)):
        return _is_host_value(node.value, host, ctx)
    if isinstance(node, ast.Attribute):
        return node.attr in ("data", "T", "shape") and _is_host_value(node.value, host, ctx)
    if isinstance(node, (ast.List, ast.Tuple)):
        return bool(node.elts) and all(_is_host_value(e, host, ctx) for e in node.elts)
    if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
        return _is_host_value(node.elt, host, ctx)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("float", "int", "bool", "len", "str"):
            return True  # a Python number (reading a tensor there is a sync of its own)
        dotted = ctx.dotted(func) or ""
        if dotted.startswith(("numpy.", "np.")):
            return True
        if isinstance(func, ast.Attribute):
            if func.attr in _HOST_RESULTS and not node.args:
                return True
            if func.attr in _SAME_PLACE:
                return _is_host_value(func.value, host, ctx)
        if dotted.startswith("torch.") and dotted.count(".") == 1 \
                and dotted.split(".")[1] in _HOST_FACTORIES:
            return not any(k.arg == "device" for k in node.keywords)
    return False


def _infer_tensor_names(facts: FunctionFacts, ctx: ModuleContext) -> None:
    names = facts.tensor_names
    for call in facts.calls:  # names something calls .backward() on are tensors
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "backward" \
                and isinstance(func.value, ast.Name):
            names.add(func.value.id)
    if not facts.assigns:
        return
    # Two passes settle chains like `logits = model(x); loss = f(logits)`. A value found to be a
    # tensor in the first pass is one in the second too (more names only make more tensors) and
    # adds the same names again: the second pass asks only about the others, and only when the
    # first one added a name.
    pending = facts.assigns
    for _ in range(2):
        before = len(names)
        left = []
        for node in pending:
            if isinstance(node, ast.Assign):
                if is_tensor_expr(node.value, names, ctx):
                    for target in node.targets:
                        if isinstance(target, ast.Name) or (
                                isinstance(node.value, ast.Call)
                                and call_signal(node.value, model_names=ctx.model_names) == MODEL):
                            names.update(_target_names(target))
                else:
                    left.append(node)
            elif node.value is not None and isinstance(node.target, ast.Name):
                if is_tensor_expr(node.value, names, ctx):
                    names.add(node.target.id)
                else:
                    left.append(node)
        if len(names) == before:
            break
        pending = left


def iter_own_nodes_all(stmts: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node under `stmts` including nested loops, not nested functions or classes."""
    stack: list[ast.AST] = list(stmts)[::-1]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


__all__ = ["ModuleContext", "ModuleSummary", "Scope", "FunctionFacts", "Span", "guard_kind",
           "host_names", "is_tensor_expr", "iter_own_nodes", "iter_own_nodes_all", "runs_model",
           "runs_once", "source_lines"]
