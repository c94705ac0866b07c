"""Which loop is the step: the one at the user's line, or the one that is clearly the step; or which
function is, when each of its calls is a step (`--function`, in the script or any workspace module, or
the one function that is clearly the step of a file without a step loop)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import NoStepError, UsageError


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not UTF-8 text") from None


def resolve_step(path: Path, line: int) -> int:
    """The 1-based header line of the innermost loop of `path` that holds `line`; exit 6 when none
    does (naming the function the line is in, and the `--function` flag that profiles each call of it)."""
    from ..source import functions, loops

    text = _read(path)
    try:
        loop = loops.loop_at(text, line)
        if loop is not None:
            return loop.line
        function = functions.function_at(text, line)
    except loops.SourceSyntaxError as e:
        raise UsageError(f"{path.name}: cannot parse: {e}") from None
    if function is not None:
        flag = f"--function {function.qualname}"
        raise NoStepError(f"line {line} of {path.name} is in {function.qualname}(), not inside a for/while loop; to "
                          f"make each call of it the step: {flag}", kind="in-function", file=str(path), line=line,
                          candidates=((function.line, f"{function.qualname}()", flag),))
    raise NoStepError(f"line {line} of {path.name} is not inside a for/while loop", kind="not-in-loop",
                      file=str(path), line=line)


@dataclass(frozen=True)
class ChosenStep:
    """The step found without `--line`/`--function`: a loop (its header line) or a function, and why."""

    loop_line: int | None
    function: "StepFunction | None"
    reason: str


def default_step(path: Path, root: Path | None = None, cwd: Path | None = None) -> ChosenStep:
    """The step of `path` when no flag names it: the loop that is clearly the step, or the one function
    that is (`source.candidates.choose`: a LightningModule's `training_step`, the HF Trainer's for
    `trainer.train()`); exit 6 with every candidate and its flag when none or several could be. Where
    the file has no step, or only a loop that calls a model, a clear training loop of a workspace
    module it imports (a trainer's) is listed too, with the command that profiles it."""
    from ..source import candidates, loops

    path = Path(path).resolve()
    root = Path(root).resolve() if root is not None else path.parent
    cwd = Path(cwd).resolve() if cwd is not None else Path.cwd()
    text = _read(path)
    try:
        chosen = candidates.choose(text)
    except loops.SourceSyntaxError as e:
        raise UsageError(f"{path.name}: cannot parse: {e}") from None
    except candidates.NoClearStep as e:
        if e.candidates:
            _several(path, e.candidates, [], cwd)
        elsewhere = _imported_steps(path, text, root, cwd)
        if elsewhere:
            raise NoStepError(f"no loop or function in {path.name} looks like a training or inference step; "
                              f"in the workspace modules it imports: {_listing(elsewhere, path, cwd)}",
                              kind="no-step", file=str(path), candidates=_fields(elsewhere, path, cwd)) from None
        if not e.loops:
            raise NoStepError(f"no loop in {path.name}, and no function that looks like a training or inference "
                              "step; name the step function with --function (each call of it is a step)",
                              kind="no-step", file=str(path)) from None
        seen = [(None, candidates.loop_candidate(lp)) for lp in e.loops]
        raise NoStepError(f"no loop or function in {path.name} looks like a training or inference step; loops seen: "
                          f"{_listing(seen, path, cwd)}; choose one, or name the step function with --function",
                          kind="no-step", file=str(path), candidates=_fields(seen, path, cwd)) from None
    if chosen.kind == "loop":
        if chosen.loop is not None and not candidates.STRONG.intersection(chosen.loop.contains):
            elsewhere = _imported_steps(path, text, root, cwd)  # a loop that only runs a model: evaluation?
            if elsewhere:
                _several(path, [chosen], elsewhere, cwd)
        return ChosenStep(chosen.line, None, chosen.reason)
    try:
        found = resolve_function(path, chosen.function or "", root, cwd)
    except NoStepError as e:
        raise NoStepError(f"no loop in {path.name} is a step, and the step looks like {chosen.function} "
                          f"({chosen.reason}), which cannot be profiled here: {e}", kind="no-function",
                          file=str(path), candidates=((chosen.line, chosen.reason, chosen.flag),)) from None
    return ChosenStep(None, found, chosen.reason)


def _several(path: Path, here: list, elsewhere: list, cwd: Path) -> None:
    """Exit 6: more than one step is possible (of this file, and of modules it imports)."""
    listed = [(None, c) for c in here] + elsewhere
    raise NoStepError(f"more than one step is possible in {path.name}, choose one: {_listing(listed, path, cwd)}",
                      kind="ambiguous", file=str(path), candidates=_fields(listed, path, cwd))


def _flag(file: Path | None, candidate, script: Path, cwd: Path) -> str:
    """What names a candidate on the command line: its flag, or for a loop of another file, that file
    with the flag and the program's start (`mingpt/trainer.py --line 81 --entry chargpt.py`)."""
    if file is None:
        return candidate.flag
    return f"{_shown(file, cwd)} {candidate.flag} --entry {_shown(script, cwd)}"


def _listing(found: list, script: Path, cwd: Path, limit: int = 20) -> str:
    """`--line 12 (for loop in train() that calls backward)`, `--function Lit.training_step (line 30: ...)`."""
    parts = []
    for file, c in found[:limit]:
        where = f"line {c.line}: " if c.kind == "function" and c.defined_here else ""
        parts.append(f"{_flag(file, c, script, cwd)} ({where}{c.reason})")
    more = f"; and {len(found) - limit} more" if len(found) > limit else ""
    return "; ".join(parts) + more


def _fields(found: list, script: Path, cwd: Path) -> tuple[tuple[int, str, str], ...]:
    """NoStepError's candidates: (line, why, flag)."""
    return tuple((c.line, c.reason, _flag(file, c, script, cwd)) for file, c in found)


#: a file's imports searched for a training loop: at most this many modules
MAX_IMPORTS_SEARCHED = 30


def _imported_steps(path: Path, text: str, root: Path, cwd: Path) -> list:
    """(file, candidate) of each workspace module `path` imports whose step is a clear training loop
    (it calls backward or steps an optimizer), strongest first: where a trainer's loop is when the
    script only calls `trainer.run()`."""
    import ast

    from ..source import candidates, loops

    modules: list[tuple[str, list[Path]]] = []
    for node in loops.iter_statements(loops.parse(text).body):
        if isinstance(node, ast.Import):
            modules += [(alias.name, [path.parent, root, cwd]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = [path.parents[node.level - 1]] if node.level and node.level <= len(path.parents) \
                else [path.parent, root, cwd]
            for alias in node.names:  # `from pkg import mod`: the module pkg.mod, else pkg
                modules.append((".".join(p for p in (node.module, alias.name) if p), base))
            if node.module:
                modules.append((node.module, base))
    files: list[Path] = []
    for module, bases in modules:
        file = _module_file(module, bases) if module else None
        if file is not None and file != path and file not in files and file.stat().st_size <= MAX_FILE_BYTES:
            files.append(file)
        if len(files) >= MAX_IMPORTS_SEARCHED:
            break
    found = []
    for file in files:
        try:
            chosen = candidates.choose(_read(file))
        except (candidates.NoClearStep, loops.SourceSyntaxError, UsageError, OSError):
            continue
        if chosen.kind == "loop" and chosen.loop is not None and candidates.STRONG.intersection(chosen.loop.contains):
            found.append((file, chosen))
    return found


#: folders of a workspace that hold no module of the user's own (as the agent's Workspace.owns says)
_NOT_WORKSPACE = {"site-packages", "dist-packages", "node_modules", "__pypackages__", "venv", "env", "build", "dist",
                  "__pycache__"}
#: a workspace searched for a function stops after this many files (a huge tree is not walked whole)
MAX_FILES_SEARCHED = 5000
MAX_FILE_BYTES = 2_000_000


@dataclass(frozen=True)
class StepFunction:
    """A function each call of which is a step: the file that defines it, its qualified name, its def
    line, and the installed package it belongs to (None: a module of the workspace)."""
    file: Path
    qualname: str
    line: int
    package: str | None = None


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


#: run in the user's interpreter: where `sys.argv[1]` (a dotted module name) is, without importing it
#: or its package (their import can be slow, and runs their code)
_FIND_MODULE = """\
import importlib.machinery, importlib.util, json, sys
parts = sys.argv[1].split(".")
try:
    spec = importlib.util.find_spec(parts[0])
except (ImportError, ValueError):
    spec = None
for i in range(1, len(parts)):
    if spec is None:
        break
    places = spec.submodule_search_locations
    if not places:
        print(json.dumps({"not_a_package": ".".join(parts[:i])}))
        sys.exit(0)
    spec = importlib.machinery.PathFinder.find_spec(".".join(parts[:i + 1]), list(places))
print(json.dumps({"origin": spec.origin if spec is not None else None}))
"""
#: seconds the user's interpreter may take to say where a module is
FIND_MODULE_TIMEOUT = 60


def installed_module_file(module: str, python: str, cwd: Path) -> tuple[Path | None, str]:
    """The source file of `module` as the interpreter `python` would import it when started in `cwd`
    (an installed package's module), found without importing anything; or None and why not, said
    after "no module X under <the workspace>" ("nor in /usr/bin/python3"). UsageError when the
    interpreter cannot be asked."""
    import json
    import subprocess

    try:
        done = subprocess.run([python, "-c", _FIND_MODULE, module], cwd=str(cwd), capture_output=True, text=True,
                              timeout=FIND_MODULE_TIMEOUT)
    except OSError as e:
        raise UsageError(f"cannot run the interpreter {python}: {e.strerror or e}") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"{python} did not say within {FIND_MODULE_TIMEOUT} s where module {module!r} is") from None
    try:
        answer = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    except (ValueError, IndexError):
        answer = None
    if not isinstance(answer, dict):
        said = (done.stderr.strip().splitlines() or ["no answer"])[-1]
        raise UsageError(f"cannot ask {python} where module {module!r} is: {said}")
    if answer.get("not_a_package"):
        return None, f"nor in {python} ({answer['not_a_package']} is a module, not a package)"
    origin = answer.get("origin")
    if not isinstance(origin, str) or not origin:
        return None, f"nor in {python}"
    if not origin.endswith(".py"):
        return None, f"and in {python} it is compiled code ({origin}): only Python source can be instrumented"
    return Path(origin).resolve(), ""


def _unique(paths: list[Path]) -> list[Path]:
    return list(dict.fromkeys(p.resolve() for p in paths))


def _shown(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def _places(paths: list[Path]) -> str:
    """`a`, `a or b`, `a, b or c`."""
    shown = [str(p) for p in paths]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


def resolve_function(script: Path, name: str, root: Path | None = None, cwd: Path | None = None,
                     python: str | None = None) -> StepFunction:
    """The function (or method) `name` names; exit 6 when none or several do.

    `name` is `qualname` (`step`, `Trainer.training_step`: looked for in `script` first, then in the
    workspace's modules under `root`), `module:qualname` (`train.loop:step`, a module under the
    script's folder, the root or `cwd`; else a module of an installed package as the interpreter
    `python` imports it: `transformers.trainer:Trainer.training_step`) or `path.py:qualname` (a file,
    relative to `cwd`, the root or the script's folder, or an absolute path). Each call of it is a step.
    """
    script = Path(script).resolve()
    root = Path(root).resolve() if root is not None else script.parent
    cwd = Path(cwd).resolve() if cwd is not None else Path.cwd()
    where, sep, qual = name.rpartition(":")
    if not qual or not all(part.isidentifier() for part in qual.replace(".<locals>", "").split(".")):
        raise UsageError(f"--function {name!r}: give a function's name, `module:qualname` or `path.py:qualname`")
    package = None
    if sep:
        if where.endswith(".py") or "/" in where or os.sep in where:
            bases = _unique([cwd, root, script.parent])
            path = next((p.resolve() for p in (base / where for base in bases) if p.is_file()), None)
            looked = f"no file {where!r} (looked in {_places(bases)})"
        elif not all(part.isidentifier() for part in where.split(".")):
            raise UsageError(f"--function {name!r}: {where!r} is not a module's dotted name")
        else:
            bases = _unique([script.parent, root, cwd])
            path = _module_file(where, bases)
            looked = ""
            if path is None:  # not the workspace's: a module of an installed package, where it lives
                path, why = installed_module_file(where, python or sys.executable, script.parent)
                looked = f"no module {where!r} under {_places(bases)} {why}"
                package = where.split(".")[0]
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
                          candidates=tuple((f.line, f"{_shown(path, root)}:{f.qualname}",
                                            f"--function {_shown(path, root)}:{f.qualname}") for path, f in found))
    path, function = found[0]
    return StepFunction(path.resolve(), function.qualname, function.line, package)
