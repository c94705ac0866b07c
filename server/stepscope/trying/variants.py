"""The changes a finding can try, as source edits: worked out from the file's text with `ast` alone.

    found = finding_variants(finding, text, step_line=69, device="cpu", steps=35)
    found.variants   # [Variant(name, title, description, edits, applicable, why_not)]
    found.reason     # why there is none, in one sentence (None when there are some)
    code_fixes(diagnostic, text)   # a rule's quick fixes that change code (not "Ignore ...")

Variants by finding kind (docs/try.md):
- input-bound, at a `for … in ITER:` header: `batch-ahead` reads the batches the measurement uses
  before the loop (an experiment: the step without its batch read; not a change to keep), and, when
  ITER is a `DataLoader(...)` built in the same scope (or called right there), `workers-2` and, on a
  machine with more than 5 cores, `workers-N` with N half its cores (at most 8) and
  `prefetch_factor=4`: worker processes kept across epochs (`persistent_workers=True`; on a CUDA run
  with `pin_memory=True`).
- sync-in-step, and repeated-copy: the quick fixes of the static rules at the finding's line (SS101:
  accumulate on the device and read once after the loop; SS501: build the constant once, before
  the loop), each a variant named after its rule (`SS101-fix`, `SS501-fix`); and for a wait on a
  CUDA run at a statement that copies the batch to the device, `pinned-upload`: `pin_memory=True`
  on the loop's DataLoader and `non_blocking=True` on the copy.
- dominant-op on a CUDA run: `cudnn-benchmark` for a convolution, `tf32-matmul`
  (`torch.backends.cuda.matmul.allow_tf32`, which changes results slightly) for a matrix multiply,
  set once before the step loop.
Every other finding has none, and says why.

`describe_variants(report)` lists them in a report's findings (their names, titles and whether they
are a change to keep), read from the findings' files as they are.

Invariants: pure but for `describe_variants`, which reads the findings' files (a text in, edits out;
nothing is written here); a variant's edits never overlap and leave code that parses (checked before
it is offered); names a variant introduces appear nowhere else in the file.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..rules import check_source
from ..rules.model import Diagnostic, Edit, Fix
from ..rules.quickfix import Source, editor_fixes

#: the loop's iterable wrapped by these calls is still the loader (`enumerate(loader)`, `tqdm(loader)`)
_WRAPPERS = frozenset({"enumerate", "tqdm", "iter"})
_LOADERS = frozenset({"DataLoader"})
#: DataLoader's positional parameters up to num_workers: (dataset, batch_size, shuffle, sampler, batch_sampler, num_workers)
_NUM_WORKERS_POSITION = 5
MAX_WORKERS = 8
_CONV = ("conv", "cudnn_convolution")
_MATMUL = ("aten::mm", "aten::addmm", "aten::bmm", "aten::matmul", "aten::linear", "aten::baddbmm")
EXPERIMENT = ("an experiment, not a change to keep: it tells how fast the step would be if its batches were "
              "ready, and reads them all before the loop")


@dataclass(frozen=True)
class Variant:
    name: str
    title: str
    description: str
    edits: tuple[Edit, ...]
    applicable: bool = True
    why_not: str | None = None

    def summary(self) -> dict:
        return {"name": self.name, "title": self.title, "description": self.description,
                "applicable": self.applicable}


@dataclass(frozen=True)
class Found:
    variants: list[Variant] = field(default_factory=list)
    reason: str | None = None


def code_fixes(diagnostic: Diagnostic, text: str) -> list[Fix]:
    """The quick fixes of a diagnostic that change the code (a suppression comment changes nothing
    to measure): the rule's real fix first, then the rule's own."""
    return [fix for fix in editor_fixes(diagnostic, text) if not fix.title.startswith("Ignore ")]


def worker_settings(cpus: int | None) -> list[tuple[int, int | None]]:
    """(num_workers, prefetch_factor) to try on a machine with `cpus` cores (None: not known)."""
    settings: list[tuple[int, int | None]] = [(2, None)]
    more = 4 if cpus is None else min(MAX_WORKERS, cpus // 2)
    if more > 2:
        settings.append((more, 4))
    return settings


def finding_variants(finding: dict, text: str | None, *, step_line: int | None = None, device: str | None = None,
                     steps: int = 35, cpus: int | None = None) -> Found:
    """The variants of `finding` on `text` (the text of the finding's file; for dominant-op, of the
    step's file, whose loop is at `step_line`), for a run on `device` on a machine of `cpus` cores.
    `steps`: how many batches `batch-ahead` reads."""
    kind = finding.get("kind")
    line = finding.get("line")
    builder = _BUILDERS.get(str(kind))
    if builder is None:
        return Found(reason=_NO_CHANGE.get(str(kind), "no mechanical change is known for this finding: its next check "
                                                      "is an experiment to set up by hand"))
    if text is None:
        return Found(reason="the source of the finding's line is not available here")
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return Found(reason="the file does not parse as it is now")
    src = _Source(text, tree)
    found = builder(src, finding, line, step_line, device, (steps, cpus))
    if isinstance(found, str):
        return Found(reason=found)
    checked = [v for v in found if _parses(text, v.edits)]
    return Found(checked, None if checked else "no variant of this finding fits the code at its line")


_NO_CHANGE = {
    "profiled-faster": "no change to the code: the measurement's warm-up is what to change (the next check says how)",
    "unsteady-window": "no change to the code: a longer warm-up or window is what to change (the next check says how)",
    "startup-cost": "no mechanical change: the start-up's cost is spread over what the program does before its loop",
    "gpu-not-observed": "no change to the code: the profiler's collection is what to change",
    "missing-label": "no change to the timing: a label only names a region",
    "small-launches": "no mechanical change: fewer, larger launches need a change of the model's code "
                      "(fusing, torch.compile, CUDA graphs) to set up by hand",
    "rank-imbalance": "no mechanical change: the ranks' work or data is what differs",
    "recompilation": "no mechanical change: what makes torch.compile compile again is the code's to fix",
    "graph-break": "no mechanical change: what breaks the graph is the code's to rewrite",
}


def _parses(text: str, edits: tuple[Edit, ...]) -> bool:
    from .change import ChangeError, apply_edits

    try:
        ast.parse(apply_edits(text, edits))
    except (ChangeError, SyntaxError, ValueError):
        return False
    return True


class _Source(Source):
    """The quick fixes' parsed text, with what the variants look up in it."""

    def for_loop_at(self, line: int | None) -> ast.For | None:
        return next((n for n in ast.walk(self.tree) if isinstance(n, ast.For) and n.lineno == line), None)

    def loop_at(self, line: int | None) -> ast.stmt | None:
        return next((n for n in ast.walk(self.tree) if isinstance(n, (ast.For, ast.While)) and n.lineno == line), None)

    def scope_of(self, node: ast.AST) -> ast.AST:
        here = self.parent.get(node)
        while here is not None and not isinstance(here, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            here = self.parent.get(here)
        return here or self.tree

    def fresh_name(self, base: str) -> str:
        names = {n.id for n in ast.walk(self.tree) if isinstance(n, ast.Name)} | \
                {n.attr for n in ast.walk(self.tree) if isinstance(n, ast.Attribute)}
        name, k = base, 2
        while name in names or name in self.text:
            name, k = f"{base}_{k}", k + 1
        return name


def _call_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            return func.id
        if isinstance(func, ast.Attribute):
            return func.attr
    return None


# -- input-bound -----------------------------------------------------------------------------------
def _input_bound(src: _Source, finding: dict, line, step_line, device, sizes) -> list[Variant] | str:
    loop = src.for_loop_at(line)
    if loop is None:
        return f"the batch read at line {line} is not the header of a `for … in …:` loop, where a variant would go"
    if line is None or len(src.lines) < line:
        return "the finding has no line"
    steps, cpus = sizes
    variants = [_batch_ahead(src, loop, steps)]
    variants += _workers(src, loop, device, worker_settings(cpus))
    return [v for v in variants if v is not None]


def _batch_ahead(src: _Source, loop: ast.For, steps: int) -> Variant | None:
    iterable = src.segment(loop.iter)
    if iterable is None or "\n" in iterable or loop.iter.lineno != loop.lineno:
        return None
    name = src.fresh_name("batches_ahead")
    indent = src.indent(loop.lineno)
    read = (f"{indent}{name} = [batch for _, batch in zip(range({steps}), {iterable})]"
            f"  # the batches the try measures, read before the loop\n")
    edits = (Edit(loop.lineno, 0, loop.lineno, 0, read),
             Edit(loop.iter.lineno, loop.iter.col_offset, loop.iter.end_lineno, loop.iter.end_col_offset, name))
    return Variant("batch-ahead", "Read the batches before the loop (an experiment)",
                   "The same batches, in the same order, read before the loop: the step without its batch read, "
                   "the most that a faster input pipeline can save.", edits, applicable=False, why_not=EXPERIMENT)


def _loader_call(src: _Source, loop: ast.For) -> ast.Call | None:
    """The `DataLoader(...)` call the loop iterates: in its header, or assigned to the name it
    iterates in the same scope before the loop (the last such assignment)."""
    node = loop.iter
    while isinstance(node, ast.Call) and _call_name(node) in _WRAPPERS and node.args:
        node = node.args[0]
    if _call_name(node) in _LOADERS:
        return node  # type: ignore[return-value]
    if not isinstance(node, ast.Name):
        return None
    scope = src.scope_of(loop)
    found = None
    for stmt in ast.walk(scope):
        if isinstance(stmt, ast.Assign) and stmt.lineno < loop.lineno and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == node.id \
                and _call_name(stmt.value) in _LOADERS and src.scope_of(stmt) is scope:
            if found is None or stmt.lineno > found.lineno:
                found = stmt
    return found.value if found is not None else None  # type: ignore[return-value]


def _set_keywords(src: _Source, call: ast.Call, values: dict[str, str]) -> tuple[Edit, ...]:
    edits = []
    added = []
    for name, value in values.items():
        present = next((k for k in call.keywords if k.arg == name), None)
        if present is not None:
            edits.append(Edit(present.value.lineno, present.value.col_offset, present.value.end_lineno,
                              present.value.end_col_offset, value))
        else:
            added.append(f"{name}={value}")
    if added:
        last = max(((n.end_lineno, n.end_col_offset) for n in [*call.args, *(k.value for k in call.keywords)]),
                   default=None)
        if last is None:  # DataLoader() with no argument: nothing to load, nothing to try
            return ()
        edits.append(Edit(last[0], last[1], last[0], last[1], ", " + ", ".join(added)))
    return tuple(edits)


def _workers(src: _Source, loop: ast.For, device: str | None,
             settings: list[tuple[int, int | None]]) -> list[Variant]:
    call = _loader_call(src, loop)
    if call is None or any(k.arg is None for k in call.keywords) or len(call.args) > _NUM_WORKERS_POSITION \
            or any(isinstance(a, ast.Starred) for a in call.args):
        return []
    current = next((k.value for k in call.keywords if k.arg == "num_workers"), None)
    now = current.value if isinstance(current, ast.Constant) and isinstance(current.value, int) else None
    out = []
    for workers, prefetch in settings:
        if now is not None and now >= workers:
            continue
        values = {"num_workers": str(workers), "persistent_workers": "True"}
        words = f"{workers} worker processes read the batches ahead of the step (num_workers={workers}, kept " \
                f"across epochs"
        if prefetch:
            values["prefetch_factor"] = str(prefetch)
            words += f", {prefetch} batches ahead per worker"
        if device == "cuda":
            values["pin_memory"] = "True"
            words += ", into pinned memory"
        edits = _set_keywords(src, call, values)
        if edits:
            out.append(Variant(f"workers-{workers}", f"DataLoader with {workers} workers", words + ").", edits))
    return out


# -- quick fixes of the static rules at the finding's line ------------------------------------------
def _rule_fixes(codes: tuple[str, ...]):
    def build(src: _Source, finding: dict, line, step_line, device, sizes) -> list[Variant] | str:
        if line is None:
            return "the finding has no line"
        found = [d for d in check_source(src.text, str(finding.get("file") or "<finding>"))
                 if d.code in codes and d.line <= line <= d.end_line]
        out = []
        for d in found:
            for fix in code_fixes(d, src.text):
                name = f"{d.code}-fix"
                if all(v.name != name for v in out):
                    out.append(Variant(name, fix.title, f"{fix.title} ({d.code}'s quick fix at line {d.line}).",
                                       fix.edits))
        if not out:
            return (f"no quick fix of {' / '.join(codes)} applies at line {line}: the value read there is used in "
                    "the step, or the code is not a shape a fix is sure about")
        return out
    return build


# -- sync-in-step: a pageable upload ----------------------------------------------------------------
def _uploads(src: _Source, line: int) -> list[ast.Call]:
    """The `.to(device)` / `.cuda()` calls of the statement at `line` that move a batch to the device
    and do not say non_blocking."""
    stmt = next((n for n in ast.walk(src.tree) if isinstance(n, ast.stmt) and n.lineno == line
                 and not isinstance(n, (ast.For, ast.While, ast.If, ast.With, ast.FunctionDef, ast.ClassDef))), None)
    if stmt is None:
        return []
    out = []
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cuda") \
                and not any(k.arg == "non_blocking" for k in node.keywords) and not any(k.arg is None for k in node.keywords):
            if node.func.attr == "cuda" or node.args or any(k.arg == "device" for k in node.keywords):
                out.append(node)
    return out


def _pinned_upload(src: _Source, finding: dict, line, device) -> Variant | None:
    """The batch copied to the device from pinned memory without the host waiting: `pin_memory=True`
    on the loop's DataLoader and `non_blocking=True` on the statement's copies (CUDA only)."""
    if device != "cuda" or line is None:
        return None
    calls = _uploads(src, line)
    loop = src.parent.get(next((n for n in ast.walk(src.tree) if isinstance(n, ast.stmt) and n.lineno == line), src.tree))
    while loop is not None and not isinstance(loop, ast.For):
        loop = src.parent.get(loop)
    loader = _loader_call(src, loop) if isinstance(loop, ast.For) else None
    if not calls or loader is None or any(k.arg is None for k in loader.keywords):
        return None
    edits = list(_set_keywords(src, loader, {"pin_memory": "True"}))
    for call in calls:
        if call.args or call.keywords:
            last = max((n.end_lineno, n.end_col_offset) for n in [*call.args, *(k.value for k in call.keywords)])
            edits.append(Edit(last[0], last[1], last[0], last[1], ", non_blocking=True"))
        else:  # `.cuda()`
            edits.append(Edit(call.end_lineno, call.end_col_offset - 1, call.end_lineno, call.end_col_offset - 1,
                              "non_blocking=True"))
    return Variant("pinned-upload", "Copy the batch from pinned memory, without waiting",
                   "pin_memory=True on the DataLoader and non_blocking=True on the copy: the host queues the copy and "
                   "goes on, instead of waiting for a pageable upload.", tuple(edits))


def _sync_in_step(src: _Source, finding: dict, line, step_line, device, sizes) -> list[Variant] | str:
    fixes = _rule_fixes(("SS101",))(src, finding, line, step_line, device, sizes)
    pinned = _pinned_upload(src, finding, line, device)
    if pinned is None:
        return fixes
    return [pinned, *(fixes if isinstance(fixes, list) else [])]


# -- dominant-op -----------------------------------------------------------------------------------
def _dominant_op(src: _Source, finding: dict, line, step_line, device, sizes) -> list[Variant] | str:
    if device != "cuda":
        return "no mechanical change on this device: cuDNN autotuning and TF32 matrix multiplies exist on CUDA only"
    op = str((finding.get("figures") or {}).get("op") or "").lower()
    loop = src.loop_at(step_line)
    if loop is None:
        return "the step loop is not in this file, where the setting would go"
    if not src.imports_torch():
        return "the step's file does not `import torch`, which the setting needs"
    indent = src.indent(loop.lineno)
    out = []
    if any(word in op for word in _CONV):
        out.append(Variant("cudnn-benchmark", "Let cuDNN pick the fastest convolution algorithm",
                           "torch.backends.cudnn.benchmark = True before the step loop: cuDNN times its algorithms "
                           "for each input shape once, then uses the fastest.",
                           (Edit(loop.lineno, 0, loop.lineno, 0,
                                 f"{indent}torch.backends.cudnn.benchmark = True  # autotune convolutions\n"),)))
    if any(op == name or op.startswith(name) for name in _MATMUL):
        out.append(Variant("tf32-matmul", "Allow TF32 matrix multiplies",
                           "torch.backends.cuda.matmul.allow_tf32 = True before the step loop: float32 matrix "
                           "multiplies on tensor cores, with a 10-bit mantissa (results change slightly: the values "
                           "check says by how much).",
                           (Edit(loop.lineno, 0, loop.lineno, 0,
                                 f"{indent}torch.backends.cuda.matmul.allow_tf32 = True  # TF32 matrix multiplies\n"),)))
    if not out:
        return f"no setting is known to speed up {op or 'this operator'}"
    return out


_BUILDERS = {
    "input-bound": _input_bound,
    "sync-in-step": _sync_in_step,
    "repeated-copy": _rule_fixes(("SS501",)),
    "dominant-op": _dominant_op,
}


def describe_variants(report: dict) -> None:
    """Give each finding of `report` the variants it can try (`variants`: [{name, title, description,
    applicable}]) or, where there is none, why (`variants_reason`), from the text of its file as it is
    now (each file read once; one that cannot be read has no variants, and says so)."""
    from ..measurement.scope import step_device

    scenario = report.get("scenario") or {}
    step = scenario.get("step") or {}
    device = step_device(scenario.get("observed"))
    if device is None and (report.get("gpu") or {}).get("observed"):
        device = "cuda"
    cpus = (report.get("machine") or scenario.get("machine") or {}).get("cpu_count")
    texts: dict[str, str | None] = {}

    def text_of(path: str | None) -> str | None:
        if not path:
            return None
        if path not in texts:
            try:
                with open(path, "rb") as f:
                    texts[path] = f.read().decode("utf-8", "surrogateescape")
            except OSError:
                texts[path] = None
        return texts[path]

    for finding in report.get("findings") or []:
        on_step = finding.get("kind") == "dominant-op"
        text = text_of(step.get("file") if on_step else finding.get("file"))
        same_file = on_step or (finding.get("file") and finding.get("file") == step.get("file"))
        found = finding_variants(finding, text, step_line=step.get("line") if same_file else None, device=device,
                                 cpus=cpus if isinstance(cpus, int) else None)
        finding["variants"] = [v.summary() for v in found.variants]
        finding["variants_reason"] = found.reason
