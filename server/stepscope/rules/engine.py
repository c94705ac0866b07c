"""Run the rules over one source text: parse, build the context once, apply every enabled rule,
drop suppressed findings, attach the suppression fix.

Invariants:
- `check_source` never raises for any input text: code that does not parse is checked up to the
  line before the error (so diagnostics stay while the user types), or not at all. That is the
  editor's view; `check_whole_source` (what `stepscope check` runs on a file) refuses a text that
  does not parse instead, so a file is never counted as checked when only part of it was.
- Output is sorted by (line, col, code) and has no duplicates.
- A line containing `# stepscope: ignore` silences every rule on it; `# stepscope: ignore[SS101,
  SS2]` silences those codes or prefixes. A diagnostic is silenced by a comment on any line it
  spans.
- What the rules find (`check_tree`'s third result) depends on the code only; `finalize` adds
  what depends on the text of the lines (suppression, its quick fix, order), so an editor can
  re-apply it after an edit that changed comments alone (see `incremental`).
"""

from __future__ import annotations

import ast
import gc
import re
from typing import Callable, Iterable

from .config import Config
from .context import ModuleContext, ModuleSummary
from .labels import check_ss301
from .model import Diagnostic, Edit, Fix
from .profiler import (
    check_ss401,
    check_ss402,
    check_ss403,
    check_ss404,
    check_ss405,
    check_ss406,
    check_ss407,
    check_ss502,
)
from .sync import check_ss101, check_ss102, check_ss103
from .tensors import check_ss501
from .timing import check_ss201, check_ss202

RuleFn = Callable[[ModuleContext, str, Config], Iterable[Diagnostic]]

RULE_FUNCTIONS: dict[str, RuleFn] = {
    "SS101": lambda ctx, path, cfg: check_ss101(ctx, path),
    "SS102": lambda ctx, path, cfg: check_ss102(ctx, path, cfg.sync_min_calls),
    "SS103": lambda ctx, path, cfg: check_ss103(ctx, path),
    "SS201": lambda ctx, path, cfg: check_ss201(ctx, path),
    "SS202": lambda ctx, path, cfg: check_ss202(ctx, path),
    "SS301": lambda ctx, path, cfg: check_ss301(ctx, path),
    "SS401": lambda ctx, path, cfg: check_ss401(ctx, path),
    "SS402": lambda ctx, path, cfg: check_ss402(ctx, path),
    "SS403": lambda ctx, path, cfg: check_ss403(ctx, path),
    "SS404": lambda ctx, path, cfg: check_ss404(ctx, path),
    "SS405": lambda ctx, path, cfg: check_ss405(ctx, path),
    "SS406": lambda ctx, path, cfg: check_ss406(ctx, path),
    "SS407": lambda ctx, path, cfg: check_ss407(ctx, path),
    "SS501": lambda ctx, path, cfg: check_ss501(ctx, path),
    "SS502": lambda ctx, path, cfg: check_ss502(ctx, path),
}

# Words one of the rules needs to see before it can report anything: a file without any of them
# is clean, and skipping the parse keeps `check` fast on large code bases.
_TRIGGERS = re.compile(
    r"\.item\(|\.cpu\(|\.numpy\(|\.tolist\(|synchronize|float\(|int\(|bool\(|print\(|\bif\b"
    r"|time|profile|record_function|nvtx|schedule|export_|activities|key_averages|torch"
    r"|cuda"
)
_SUPPRESS = re.compile(r"#\s*stepscope:\s*ignore(?:\[([^\]]*)\])?", re.IGNORECASE)


def parse_tolerant(text: str) -> tuple[ast.Module | None, str]:
    """Parse `text`; if it does not parse, parse the part above the error. Returns (tree, text)."""
    try:
        return ast.parse(text), text
    except SyntaxError as e:
        line = e.lineno or 0
    except (ValueError, RecursionError, MemoryError):
        return None, text
    lines = re.split(r"(?<=\n)|(?<=\r)(?!\n)", text)
    # The error may be reported a line or two below the half-typed statement: try a few cuts.
    for cut in (line - 1, line - 2, line - 3):
        if cut <= 0:
            break
        prefix = "".join(lines[:cut])
        try:
            return ast.parse(prefix), prefix
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return None, text


def suppressed_codes(line_text: str) -> tuple[str, ...] | None:
    """None: no suppression comment; (): every code; else the codes/prefixes named."""
    match = _SUPPRESS.search(line_text)
    if not match:
        return None
    if match.group(1) is None:
        return ()
    return tuple(c.strip().upper() for c in match.group(1).split(",") if c.strip())


def _is_suppressed(diag: Diagnostic, lines: list[str]) -> bool:
    for line in range(diag.line, diag.end_line + 1):
        if not 1 <= line <= len(lines):
            continue
        codes = suppressed_codes(lines[line - 1])
        if codes is None:
            continue
        if codes == () or any(diag.code.startswith(c) for c in codes):
            return True
    return False


def suppression_fix(diag: Diagnostic, lines: list[str]) -> Fix | None:
    """Append `# stepscope: ignore[CODE]` to the diagnostic's first line (or extend one)."""
    if not 1 <= diag.line <= len(lines):
        return None
    text = lines[diag.line - 1]
    match = _SUPPRESS.search(text)
    if match and match.group(1) is not None:
        start, end = match.span(1)
        merged = ", ".join([*(c.strip() for c in match.group(1).split(",") if c.strip()), diag.code])
        return Fix(f"Ignore {diag.code} on this line",
                   (Edit(diag.line, start, diag.line, end, merged),))
    end = len(text.rstrip())
    return Fix(f"Ignore {diag.code} on this line",
               (Edit(diag.line, end, diag.line, len(text), f"  # stepscope: ignore[{diag.code}]"),))


def selected_codes(config: Config, path: str) -> list[str]:
    """The codes that run on `path`, sorted."""
    return [c for c in sorted(config.enabled_codes()) if config.enabled(c, path)]


def needs_parse(text: str) -> bool:
    """False when no rule can report anything on `text` (the check is then empty)."""
    return bool(_TRIGGERS.search(text)) and "\x00" not in text


class NotParsed(ValueError):
    """The text does not parse as Python: `str(e)` is a one-line reason, `line` where."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


def parse_whole(text: str) -> ast.Module:
    """Parse `text` or raise `NotParsed` with a one-line reason."""
    with collector_paused():
        try:
            return ast.parse(text)
        except SyntaxError as e:
            where = f"line {e.lineno}: " if e.lineno else ""
            raise NotParsed(f"does not parse ({where}{e.msg})", e.lineno) from None
        except (ValueError, RecursionError, MemoryError) as e:
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise NotParsed(f"does not parse ({reason})") from None


def check_whole_source(text: str, path: str, config: Config | None = None) -> list[Diagnostic]:
    """The diagnostics for a whole file's text. Raises `NotParsed` when it does not parse (even
    when no rule could report anything on it: the file was not checked)."""
    config = config or Config()
    with collector_paused():  # one pause for both: a collection in between would scan the tree
        tree = parse_whole(text)
        codes = selected_codes(config, path)
        if not codes or not needs_parse(text):
            return []
        return check_tree(tree, text, path, config, codes)[0]


def check_source(text: str, path: str, config: Config | None = None, *,
                 strict: bool = False) -> list[Diagnostic]:
    """The diagnostics for `text` (the content of `path`). Never raises unless `strict`.

    `strict=True` lets a rule's own error propagate (for tests); by default a failing rule is
    skipped so one odd construct never takes away every other diagnostic.
    """
    config = config or Config()
    codes = selected_codes(config, path)
    if not codes or not needs_parse(text):
        return []
    with collector_paused():
        tree, parsed_text = parse_tolerant(text)
        if tree is None:
            return []
        return check_tree(tree, parsed_text, path, config, codes, strict=strict)[0]


class collector_paused:
    """A syntax tree is hundreds of thousands of small objects with no cycles; letting the cycle
    collector scan them again and again while they are built costs more than the checks."""

    def __enter__(self) -> None:
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.was_enabled:
            gc.enable()


def check_tree(tree: ast.Module, text: str, path: str, config: Config, codes: list[str], *,
               strict: bool = False, summary: ModuleSummary | None = None
               ) -> tuple[list[Diagnostic], ModuleContext | None, list[Diagnostic]]:
    """Run `codes` over a parsed module whose source is `text`. Returns the diagnostics, the
    context built, and what the rules found before suppression (`finalize` turns that into the
    diagnostics for any text with the same code).

    With `summary`, module-wide facts (imports, profiler names, assignments, ...) come from it
    instead of from `tree`: `tree` may then hold only part of the module (see `incremental`).
    """
    found: list[Diagnostic] = []
    try:
        ctx = ModuleContext.build(tree, text, config.model_names, summary=summary)
    except RecursionError:
        if strict:
            raise
        return [], None, []
    for code in codes:
        try:
            found.extend(RULE_FUNCTIONS[code](ctx, path, config))
        except Exception:  # noqa: BLE001 - see docstring: one rule never hides the others
            if strict:
                raise
    return finalize(found, ctx.lines), ctx, found


def finalize(found: list[Diagnostic], lines: list[str]) -> list[Diagnostic]:
    """Drop suppressed findings, attach the suppression fix, remove duplicates, sort."""
    unique: dict[tuple, Diagnostic] = {}
    for diag in found:
        if _is_suppressed(diag, lines):
            continue
        fix = suppression_fix(diag, lines)
        if fix is not None:
            diag = Diagnostic(**{**diag.__dict__, "fixes": (*diag.fixes, fix)})
        unique.setdefault((diag.line, diag.col, diag.end_line, diag.end_col, diag.code), diag)
    return sorted(unique.values(), key=lambda d: (d.line, d.col, d.code))
