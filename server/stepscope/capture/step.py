"""Which loop is the step: the one at the user's line, or the one that is clearly the step."""

from __future__ import annotations

from pathlib import Path

from ..errors import NO_STEP, NoStepError, StepscopeError, UsageError


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not UTF-8 text") from None


def resolve_step(path: Path, line: int | None) -> int:
    """Return the 1-based header line of the step loop in `path`.

    With `line`: the innermost loop that contains it. Without: the loop `choose_step` picks; an
    ambiguous or missing choice ends with exit 6 and the candidates listed.
    """
    from ..source import loops

    text = _read(path)
    try:
        if line is not None:
            loop = loops.loop_at(text, line)
            if loop is None:
                raise NoStepError(f"line {line} of {path.name} is not inside a for/while loop", kind="not-in-loop",
                                  file=str(path), line=line)
            return loop.line
        return loops.choose_step(text).line
    except loops.SourceSyntaxError as e:
        raise UsageError(f"{path.name}: cannot parse: {e}") from None
    except loops.AmbiguousStep as e:
        candidates = tuple((c.line, ", ".join(c.reasons) or c.kind) for c in e.candidates)
        listing = "; ".join(f"line {line} ({why})" for line, why in candidates)
        raise NoStepError(f"more than one loop could be the step, choose with --line: {listing}", kind="ambiguous",
                          file=str(path), candidates=candidates) from None
    except loops.NoStepFound:
        raise NoStepError(f"no loop in {path.name} looks like a training or inference step; choose one with --line",
                          kind="no-step", file=str(path)) from None


def resolve_function(path: Path, name: str) -> int:
    """Return the def line of the function (or method) `name` in `path`; exit 6 if absent.

    `name` may be qualified (`Trainer.training_step`); the last part is what gets instrumented.
    """
    import ast

    text = _read(path)
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as e:
        raise UsageError(f"{path.name}: cannot parse: line {e.lineno}: {e.msg}") from None
    short = name.rsplit(".", 1)[-1]
    found = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == short]
    if not found:
        raise StepscopeError(f"no function named {short!r} in {path.name}", NO_STEP)
    if len(found) > 1:
        lines = ", ".join(str(n.lineno) for n in found)
        raise StepscopeError(f"several functions named {short!r} in {path.name} (lines {lines}): "
                             "point --line at the loop that calls the one you mean", NO_STEP)
    return found[0].lineno
