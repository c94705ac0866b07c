"""Which loop is the step: the one at the user's line, or the one that is clearly the step; or which
function is, when each of its calls is a step (`--function`, in the script or any workspace module)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import NoStepError, UsageError


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
        seen = loops.find_loops(text)
        candidates = tuple((lp.line, f"{lp.kind} loop" + (f" in {lp.function}()" if lp.function else "")) for lp in seen)
        if not seen:
            raise NoStepError(f"no loop in {path.name}; for a step that is a function, name it with --function",
                              kind="no-step", file=str(path)) from None
        listing = "; ".join(f"line {line} ({what})" for line, what in candidates[:20])
        more = f"; and {len(candidates) - 20} more" if len(candidates) > 20 else ""
        raise NoStepError(f"no loop in {path.name} looks like a training or inference step; loops seen: {listing}{more}; "
                          "choose one with --line (or a step function with --function)",
                          kind="no-step", file=str(path), candidates=candidates) from None


#: folders of a workspace that hold no module of the user's own (as the agent's Workspace.owns says)
_NOT_WORKSPACE = {"site-packages", "dist-packages", "node_modules", "__pypackages__", "venv", "env", "build", "dist",
                  "__pycache__"}
#: a workspace searched for a function stops after this many files (a huge tree is not walked whole)
MAX_FILES_SEARCHED = 5000
MAX_FILE_BYTES = 2_000_000


@dataclass(frozen=True)
class StepFunction:
    """A function each call of which is a step: the file that defines it, its qualified name, its def line."""
    file: Path
    qualname: str
    line: int


def _functions_in(path: Path, name: str):
    from ..source.functions import functions_named
    from ..source.loops import SourceSyntaxError

    try:
        return functions_named(_read(path), name)
    except (SourceSyntaxError, UsageError, OSError):
        return []


def _workspace_modules(root: Path):
    """The workspace's own Python files, in a stable order (hidden folders, environments and
    installed packages left out), at most `MAX_FILES_SEARCHED`."""
    found = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _NOT_WORKSPACE)
        for name in sorted(files):
            path = Path(folder) / name
            if name.endswith(".py") and path.is_file() and path.stat().st_size <= MAX_FILE_BYTES:
                yield path
                found += 1
                if found >= MAX_FILES_SEARCHED:
                    return


def _module_file(module: str, bases: list[Path]) -> Path | None:
    """`pkg.mod` as a file under one of `bases` (pkg/mod.py, or pkg/mod/__init__.py)."""
    parts = module.split(".")
    for base in bases:
        for candidate in (base.joinpath(*parts).with_suffix(".py"), base.joinpath(*parts, "__init__.py")):
            if candidate.is_file():
                return candidate.resolve()
    return None


def _shown(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def resolve_function(script: Path, name: str, root: Path | None = None, cwd: Path | None = None) -> StepFunction:
    """The function (or method) `name` names; exit 6 when none or several do.

    `name` is `qualname` (`step`, `Trainer.training_step`: looked for in `script` first, then in the
    workspace's modules under `root`), `module:qualname` (`train.loop:step`, a module under the
    script's folder, the root or `cwd`) or `path.py:qualname` (a file, relative to `cwd`, the root or
    the script's folder). Each call of it is a step.
    """
    script = Path(script).resolve()
    root = Path(root).resolve() if root is not None else script.parent
    cwd = Path(cwd).resolve() if cwd is not None else Path.cwd()
    where, sep, qual = name.rpartition(":")
    if not qual or not all(part.isidentifier() for part in qual.replace(".<locals>", "").split(".")):
        raise UsageError(f"--function {name!r}: give a function's name, `module:qualname` or `path.py:qualname`")
    if sep:
        if where.endswith(".py") or "/" in where or os.sep in where:
            candidates = [base / where for base in (cwd, root, script.parent)]
            path = next((p.resolve() for p in candidates if p.is_file()), None)
            looked = f"no file {where!r} (looked in {cwd}, {root} and {script.parent})"
        else:
            path = _module_file(where, [script.parent, root, cwd])
            looked = f"no module {where!r} under {script.parent}, {root} or {cwd}"
        if path is None:
            raise NoStepError(f"--function {name!r}: {looked}", kind="no-function", file=str(script))
        files = [path]
    else:
        files = [script]
    found = [(path, f) for path in files for f in _functions_in(path, qual)]
    if not found and not sep:  # not in the script: the workspace's own modules
        found = [(path, f) for path in _workspace_modules(root) if path.resolve() != script
                 for f in _functions_in(path, qual)]
    if not found:
        scope = f"{_shown(files[0], root)}" if sep else f"{script.name} or the workspace's modules under {root}"
        raise NoStepError(f"no function named {qual!r} in {scope}", kind="no-function", file=str(script))
    if len(found) > 1:
        listing = ", ".join(f"{_shown(path, root)}:{f.qualname} (line {f.line})" for path, f in found[:10])
        raise NoStepError(f"several functions match {name!r}: {listing}; name one with module:qualname or "
                          "path.py:qualname", kind="ambiguous-function", file=str(script),
                          candidates=tuple((f.line, f"{_shown(path, root)}:{f.qualname}") for path, f in found))
    path, function = found[0]
    return StepFunction(path.resolve(), function.qualname, function.line)
