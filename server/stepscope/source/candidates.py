"""What in a Python file could be the step, and which one clearly is.

Besides its loops (loops.py), a file's step can be a function each call of which is a step: a
LightningModule's `training_step`, a `train_step`, a method that calls backward; or a function a
framework runs for a call in this file (`trainer.fit(model)` runs `LitModel.training_step`,
`Trainer(...).train()` runs the HF Trainer's `training_step`). Pure `ast`, standard library only.

Invariants:
- A function of the file is step-like by its name (`TRAINING_NAMES`, `INFERENCE_NAMES`) or because
  its own body (not a nested loop, function or class) calls backward. A helper around the step
  (`backward`, `*_backward`, a framework's `on_*` hook) is not one, and neither is `forward` (every
  model has one; the step that calls it is the candidate).
- A framework call is recognised only where the file says which framework its trainer comes from
  (imports of `lightning`, `pytorch_lightning`, `transformers`) and which class the trainer and the
  module are (a constructor call, or a name assigned one). Its function is named as `--function`
  takes it: `LitModel.training_step` for a class of this file (where the method is defined, a base
  class of the file included), `pkg.mod:Class.training_step` for an imported class, and
  `transformers.trainer:Trainer.training_step` for the HF Trainer.
- A loop that calls one of the file's step-like functions "calls a step function" (`step_loops`),
  and a step-like function named inside a step loop (called, or passed: `optimizer.step(closure)`)
  or defined inside one is part of that loop's step, never a candidate of its own.
- `choose(source)` returns one `Candidate` or raises `NoClearStep`; it never guesses between equally
  good ones. The loop `loops.choose_among` picks wins, unless its only evidence is a model or step
  function call and a training function stands apart from it (then both are listed). When no loop is
  a step, the first non-empty tier must hold exactly one function, step-like by its name or a call:
  training functions a framework call here runs, other training functions named as steps, training
  functions that only call backward (never picked: listed), then inference functions likewise.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace
from typing import Iterator, Literal

from .loops import (
    BACKWARD,
    OPTIMIZER,
    STRONG,
    AmbiguousStep,
    Loop,
    NoStepFound,
    choose_among,
    find_loops,
    iter_statements,
    parse,
    step_signals,
)

__all__ = ["Candidate", "NoClearStep", "step_functions", "step_loops", "choose", "step_function_at", "loop_candidate",
           "TRAINING_NAMES", "INFERENCE_NAMES"]

TRAINING_NAMES = frozenset({"training_step", "train_step", "train_one_step", "train_on_batch"})
INFERENCE_NAMES = frozenset({"validation_step", "val_step", "eval_step", "evaluation_step", "test_step",
                             "predict_step", "inference_step", "infer_step"})
# Helpers around a step, not steps: `backward`, `manual_backward`, `loss_backward`, Lightning's `on_*` hooks.
_HELPER = re.compile(r"^(backward|on_\w+)$|(?<!forward)_backward$")
# Lightning's Trainer methods and the LightningModule hook each one runs per batch.
_LIGHTNING_RUNS = {"fit": "training_step", "validate": "validation_step", "test": "test_step",
                   "predict": "predict_step"}
_LIGHTNING_TRAINER = re.compile(r"^(lightning|lightning\.pytorch|pytorch_lightning)(\.trainer){0,2}\.Trainer$")
_LIGHTNING_CLI = re.compile(r"^(lightning|lightning\.pytorch|pytorch_lightning)(\.cli)?\.LightningCLI$")
_LIGHTNING_MODULE = re.compile(r"^(lightning|lightning\.pytorch|pytorch_lightning)(\.core)?(\.module)?"
                               r"\.LightningModule$")
_HF_TRAINERS = frozenset({"transformers.Trainer", "transformers.trainer.Trainer", "transformers.Seq2SeqTrainer",
                          "transformers.trainer_seq2seq.Seq2SeqTrainer"})
HF_TRAINING_STEP = "transformers.trainer:Trainer.training_step"
_FRAMEWORKS = frozenset({"lightning", "pytorch_lightning", "transformers"})


@dataclass(frozen=True)
class Candidate:
    """A loop or a function that could be the step. `line` is a loop's header, a function's def line,
    or, for a function defined elsewhere, the line of the first call here that runs it."""

    kind: Literal["loop", "function"]
    line: int
    col: int
    why: str
    function: str | None = None  # the name `--function` takes
    training: bool = True
    defined_here: bool = False
    by_name: bool = True  # step-like by its name or a framework call; False: only because it calls backward
    runs: tuple[tuple[int, int, str], ...] = field(default=())  # (line, col, "trainer.fit()"): calls that run it
    loop: Loop | None = None

    @property
    def flag(self) -> str:
        """The flag that names this step, exactly: `--line 12`, `--function LitModel.training_step`."""
        return f"--function {self.function}" if self.function else f"--line {self.line}"

    @property
    def reason(self) -> str:
        """Why it could be the step, with where a framework runs it: `a LightningModule's training
        step, run by trainer.fit() at line 60`."""
        if not self.runs:
            return self.why
        calls = ", ".join(f"{text} at line {line}" for line, _, text in self.runs[:3])
        return f"{self.why}, run by {calls}"


class NoClearStep(LookupError):
    """No loop or function is clearly the step: `candidates` are those that tie (empty when none
    looks like a step), `loops` every loop of the file."""

    def __init__(self, candidates: list[Candidate], loops: list[Loop]):
        self.candidates, self.loops = list(candidates), list(loops)
        super().__init__("several steps are possible" if candidates else "no loop or function looks like a step")


# -- what the file says about names ------------------------------------------------------------------
def _dotted(node: ast.expr) -> str | None:
    """`L.Trainer` → "L.Trainer"; None for anything but a dotted name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    return ".".join([node.id, *parts]) if isinstance(node, ast.Name) else None


@dataclass
class _Class:
    qualname: str
    node: ast.ClassDef
    bases: list[str]  # as written (dotted), not resolved
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]


@dataclass
class _File:
    """The facts of one module the candidates are read from."""

    tree: ast.Module
    imports: dict[str, str] = field(default_factory=dict)  # local name -> full dotted name
    classes: dict[str, _Class] = field(default_factory=dict)  # qualname -> class
    functions: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, str | None]] = field(default_factory=list)
    assigned: dict[str, list[str]] = field(default_factory=dict)  # `x`, `self.x` -> callees of the calls assigned to it

    def full(self, dotted: str) -> str:
        """A dotted name with its first part resolved through the file's imports."""
        head, _, rest = dotted.partition(".")
        base = self.imports.get(head)
        if base is None:
            return dotted
        return f"{base}.{rest}" if rest else base

    def local_class(self, dotted: str) -> _Class | None:
        """The class of this file a dotted name (as written) names, when it is one."""
        if dotted in self.classes:
            return self.classes[dotted]
        named = [c for c in self.classes.values() if c.qualname.rsplit(".", 1)[-1] == dotted]
        return named[0] if len(named) == 1 else None

    def ancestry(self, cls: _Class) -> Iterator[tuple[_Class | None, str]]:
        """(class of this file or None, resolved name) of `cls`'s bases, depth first, each once."""
        seen: set[str] = set()
        stack = list(reversed(cls.bases))
        while stack:
            base = stack.pop()
            local = self.local_class(base)
            key = local.qualname if local is not None else self.full(base)
            if key in seen:
                continue
            seen.add(key)
            yield local, key
            if local is not None:
                stack.extend(reversed(local.bases))

    def is_a(self, cls: _Class, pattern: re.Pattern[str] | frozenset[str]) -> bool:
        """Whether a base of `cls` (or of a base of this file) resolves to a name `pattern` matches."""
        for local, name in self.ancestry(cls):
            if local is None and (name in pattern if isinstance(pattern, frozenset) else pattern.match(name)):
                return True
        return False


def _read(tree: ast.Module) -> _File:
    facts = _File(tree)

    def visit(body: list[ast.stmt], prefix: str, owner: str | None) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qual = f"{prefix}{node.name}"
                facts.functions.append((qual, node, owner))
                if owner is not None:
                    facts.classes[owner].methods.setdefault(node.name, node)
                visit(node.body, qual + ".", None)
            elif isinstance(node, ast.ClassDef):
                qual = f"{prefix}{node.name}"
                facts.classes[qual] = _Class(qual, node, [d for d in map(_dotted, node.bases) if d], {})
                visit(node.body, qual + ".", qual)
            else:
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                        visit([child], prefix, None)

    visit(tree.body, "", None)
    for stmt in iter_statements(tree.body):
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    facts.imports[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    facts.imports.setdefault(head, head)
        elif isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.level == 0:
            for alias in stmt.names:
                facts.imports[alias.asname or alias.name] = f"{stmt.module}.{alias.name}"
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(stmt.value, ast.Call):
            callee = _dotted(stmt.value.func)
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                name = _dotted(target)
                if name and callee:
                    facts.assigned.setdefault(name, []).append(callee)
    return facts


def _classes_of(facts: _File, node: ast.expr) -> list[str]:
    """The classes (dotted, as written) an expression's value may be an instance of: a constructor
    call, or a name assigned one."""
    if isinstance(node, ast.Call):
        callee = _dotted(node.func)
        return [callee] if callee else []
    name = _dotted(node)
    return list(dict.fromkeys(facts.assigned.get(name, []))) if name else []


def _method(facts: _File, dotted: str, hook: str) -> tuple[str, bool] | None:
    """How `--function` names `hook` of the class `dotted` (as written) runs: (name, defined here), or
    None where it cannot be told (a class of the file that inherits the hook from elsewhere, a name
    from nowhere)."""
    local = facts.local_class(dotted)
    if local is not None:
        if hook in local.methods:
            return f"{local.qualname}.{hook}", True
        for base, _ in facts.ancestry(local):
            if base is None:
                return None
            if hook in base.methods:
                return f"{base.qualname}.{hook}", True
        return None
    full = facts.full(dotted)
    if full == dotted and "." not in dotted:
        return None  # neither defined nor imported here
    module, _, cls = full.rpartition(".")
    return (f"{module}:{cls}.{hook}", False) if module else None


def _call_text(call: ast.Call) -> str:
    """`trainer.fit()`, `Trainer(...).train()`, `LightningCLI()`: the call as the reader finds it."""
    func = call.func
    if isinstance(func, ast.Attribute):
        receiver = _dotted(func.value)
        if receiver is None and isinstance(func.value, ast.Call):
            inner = _dotted(func.value.func)
            receiver = f"{inner}(...)" if inner else None
        return f"{receiver or '...'}.{func.attr}()"
    return f"{_dotted(func) or '...'}()"


def _framework_runs(facts: _File) -> Iterator[tuple[str, bool, bool, str, ast.Call]]:
    """(function name, defined here, training, why, the call) for each call of the file that runs a
    step function of a framework: a Lightning Trainer's fit/validate/test/predict, LightningCLI, an
    HF Trainer's train."""
    if not any(name.split(".")[0] in _FRAMEWORKS for name in facts.imports.values()):
        return  # every call recognised is of a class these packages define
    for node in ast.walk(facts.tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and (func.attr in _LIGHTNING_RUNS or func.attr == "train"):
            for trainer in _classes_of(facts, func.value):
                if func.attr in _LIGHTNING_RUNS and _LIGHTNING_TRAINER.match(facts.full(trainer)):
                    model = node.args[0] if node.args else next(
                        (k.value for k in node.keywords if k.arg == "model"), None)
                    hook = _LIGHTNING_RUNS[func.attr]
                    found = [(cls, _method(facts, cls, hook)) for cls in
                             (_classes_of(facts, model) if model is not None else [])]
                    here = [(cls, m) for cls, m in found if m is not None and m[1]]
                    for cls, method in here or [(cls, m) for cls, m in found if m is not None]:
                        yield method[0], method[1], hook == "training_step", \
                            f"the {hook} of {cls.rsplit('.', 1)[-1]}", node
                    break
                if func.attr == "train":
                    local = facts.local_class(trainer)
                    hf = facts.full(trainer) in _HF_TRAINERS or (local is not None and facts.is_a(local, _HF_TRAINERS))
                    if not hf:
                        continue
                    own = _method(facts, trainer, "training_step") if local is not None else None
                    if own is not None:
                        yield own[0], True, True, f"the training_step of {trainer}", node
                    else:
                        yield HF_TRAINING_STEP, False, True, "the HF Trainer's training step", node
                    break
        elif isinstance(func, (ast.Name, ast.Attribute)) and _LIGHTNING_CLI.match(facts.full(_dotted(func) or "")):
            model = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "model_class"),
                                                        None)
            cls = _dotted(model) if model is not None else None
            found = _method(facts, cls, "training_step") if cls else None
            if found:
                yield found[0], found[1], True, f"the training_step of {cls.rsplit('.', 1)[-1]}", node


def _own_why(facts: _File, node: ast.FunctionDef | ast.AsyncFunctionDef,
             owner: str | None) -> tuple[bool, bool, str] | None:
    """(training, by its name, why) when the file's function is step-like, else None."""
    lightning = owner is not None and facts.is_a(facts.classes[owner], _LIGHTNING_MODULE)
    if node.name in TRAINING_NAMES or node.name in INFERENCE_NAMES:
        training = node.name in TRAINING_NAMES
        if lightning:
            return training, True, f"a LightningModule's {node.name.replace('_', ' ')}"
        return training, True, f"named {node.name}"
    if _HELPER.search(node.name) or node.name == "forward":
        return None
    signals = step_signals(node.body)
    if BACKWARD in signals:
        return True, False, "calls backward" + (" and steps an optimizer" if OPTIMIZER in signals else "")
    return None


# -- the candidates ------------------------------------------------------------------------------------
def _function_candidates(facts: _File) -> list[Candidate]:
    found: dict[str, Candidate] = {}
    for qual, node, owner in facts.functions:
        own = _own_why(facts, node, owner)
        if own is not None and qual not in found:
            found[qual] = Candidate("function", node.lineno, node.col_offset, own[2], function=qual,
                                    training=own[0], defined_here=True, by_name=own[1])
    for name, here, training, why, call in _framework_runs(facts):
        run = (call.lineno, call.col_offset, _call_text(call))
        known = found.get(name)
        if known is not None:
            if run not in known.runs:
                found[name] = replace(known, runs=(*known.runs, run), by_name=True)
            continue
        if here:
            node = next((n for q, n, _ in facts.functions if q == name), None)
            if node is None:
                continue
            found[name] = Candidate("function", node.lineno, node.col_offset, why, function=name, training=training,
                                    defined_here=True, runs=(run,))
        else:
            found[name] = Candidate("function", call.lineno, call.col_offset, why, function=name, training=training,
                                    runs=(run,))
    return sorted(found.values(), key=lambda c: (c.line, c.col))


def step_functions(source: str | bytes | ast.Module) -> list[Candidate]:
    """The file's step-like functions and those its framework calls run, in source order (a function
    of the file at its def line, another at the first call that runs it). Raises `SourceSyntaxError`."""
    return _function_candidates(_read(parse(source)))


def _short(name: str) -> str:
    return name.rpartition(":")[2].rsplit(".", 1)[-1]


def step_loops(source: str | bytes | ast.Module, functions: list[Candidate] | None = None) -> list[Loop]:
    """`find_loops`, where a loop that calls one of the file's step-like functions calls a step function."""
    tree = parse(source)
    if functions is None:
        functions = step_functions(tree)
    return find_loops(tree, step_function_names={_short(f.function or "") for f in functions if f.defined_here})


def _loop_nodes(tree: ast.Module) -> dict[tuple[int, int], ast.stmt]:
    return {(n.lineno, n.col_offset): n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.AsyncFor, ast.While))}


def _apart_from_loops(tree: ast.Module, functions: list[Candidate], loops: list[Loop]) -> list[Candidate]:
    """The functions that are no part of a step loop's step (not named in it, not defined in it)."""
    nodes = _loop_nodes(tree)
    named: set[str] = set()
    spans = []
    for loop in loops:
        if not loop.is_step:
            continue
        spans.append((loop.line, loop.end_line))
        for node in ast.walk(nodes[(loop.line, loop.col)]):
            if isinstance(node, ast.Name):
                named.add(node.id)
            elif isinstance(node, ast.Attribute):
                named.add(node.attr)
    return [f for f in functions
            if not (f.defined_here and (_short(f.function or "") in named
                                        or any(a <= f.line <= b for a, b in spans)))]


def loop_candidate(loop: Loop) -> Candidate:
    where = f" in {loop.function}()" if loop.function else ""
    why = f"{loop.kind} loop{where}" + (f" that {', '.join(loop.reasons)}" if loop.reasons else "")
    return Candidate("loop", loop.line, loop.col, why, loop=loop)


def choose(source: str | bytes | ast.Module) -> Candidate:
    """The step of the file: one loop or one function, or raise `NoClearStep` with the candidates
    (module docstring: the preference). Raises `SourceSyntaxError` when the source does not parse."""
    tree = parse(source)
    functions = step_functions(tree)
    loops = step_loops(tree, functions)
    apart = _apart_from_loops(tree, functions, loops)
    try:
        loop = choose_among(loops)
    except AmbiguousStep as e:
        tied = [loop_candidate(lp) for lp in e.candidates] + [f for f in apart if f.training]
        raise NoClearStep(sorted(tied, key=lambda c: (c.line, c.col)), loops) from None
    except NoStepFound:
        # run by a framework call here, named as a step, or only calling backward (listed, never picked)
        tiers = [lambda f: bool(f.runs), lambda f: f.by_name and not f.runs, lambda f: not f.by_name]
        for training in (True, False):
            for tier in tiers:
                pool = [f for f in apart if f.training == training and tier(f)]
                if len(pool) == 1 and pool[0].by_name:
                    return pool[0]
                if pool:
                    raise NoClearStep(apart, loops) from None
        raise NoClearStep([], loops) from None
    training = [f for f in apart if f.training]
    if training and not STRONG.intersection(loop.contains):
        tied = [loop_candidate(loop), *training]
        raise NoClearStep(sorted(tied, key=lambda c: (c.line, c.col)), loops)
    return loop_candidate(loop)


def step_function_at(source: str | bytes | ast.Module, line: int) -> Candidate | None:
    """The file's step-like function whose def line or body holds `line` (the innermost), or None."""
    tree = parse(source)
    holding = [f for f in step_functions(tree) if f.defined_here]
    ends = {(n.lineno, n.col_offset): n.end_lineno or n.lineno for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    inside = [f for f in holding if f.line <= line <= ends.get((f.line, f.col), f.line)]
    return max(inside, key=lambda f: f.line) if inside else None
