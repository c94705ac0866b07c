"""The instrumenter on code we did not write: does every file Python compiles still compile once
rewritten, and does a program still do exactly what it did?

Three checks, each runnable under any interpreter Stepscope's agent supports (Python >= 3.10; the
agent's folder is loaded as the agent loads it, so nothing else of Stepscope is needed):

    python benchmarks/instrument_corpus.py compile PATH... [--every N] [--json OUT]
        Every .py file under PATH that this Python compiles is rewritten as a workspace module
        (with line regions, and with the step boundaries only), and as the module holding the step:
        up to three of its loops as the step loop and up to three of its functions as the step
        function. Each rewrite must compile. A failure is a file the agent would run uninstrumented
        (`InstrumentError`) or one whose rewrite raises anything else (a defect).
    python benchmarks/instrument_corpus.py unittest MODULE... [--root DIR]
        Runs each unittest module (e.g. the standard library's `test.test_grammar`) twice, plain and
        with every module under ROOT rewritten as a workspace module, and compares the outcome of
        every test (id and result). ROOT defaults to the folder of the interpreter's `test` package.
    python benchmarks/instrument_corpus.py doctest PATH... [--every N]
        Runs each file's doctests plain and rewritten (the file a workspace module) and compares
        the attempted and failed counts and the output, file by file.

The rewritten code runs with a runtime whose regions do nothing: what is checked is the rewrite
(Python's semantics kept), not the recorder (tests/agent and the profile tests check that).
Nothing is written but `--json`. tests/agent/test_instrument_corpus.py runs a slice in CI;
docs/instrumenting.md has the figures of the whole corpus.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

AGENT = Path(__file__).resolve().parent.parent / "server" / "stepscope" / "agent"


def _agent():
    """The agent package, loaded from its folder as the agent process loads it."""
    spec = importlib.util.spec_from_file_location("_corpus_bootstrap", AGENT / "bootstrap.py")
    boot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(boot)
    boot.load_agent()
    return boot.PACKAGE


class NullRuntime:
    """`__stepscope__` whose regions, frames and lines do nothing and whose step never completes."""

    def iterate(self, iterable, label):
        return iter(iterable)

    def step_boundary(self):
        pass

    def loop_end(self):
        pass

    def region(self, label):
        return contextlib.nullcontext()

    step_call = frame = line = region

    def returned(self, value):
        return value

    def compiling(self):
        return False


# -- compile ----------------------------------------------------------------------------------------
def _python_files(paths: list[str], every: int) -> list[Path]:
    found: list[Path] = []
    for root in paths:
        root_path = Path(root)
        if root_path.is_file():
            found.append(root_path)
            continue
        for folder, dirs, files in os.walk(root_path):
            dirs[:] = sorted(d for d in dirs if d != ".git")
            found.extend(Path(folder) / f for f in sorted(files) if f.endswith(".py"))
    return found[::every] if every > 1 else found


def _steps_of(tree: ast.Module) -> tuple[list[int], list[tuple[str, int]]]:
    """Up to three loops (first, middle, last) and three functions (qualified name, def line)."""
    loops: list[int] = []
    functions: list[tuple[str, int]] = []

    def visit(body, scope):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.append((".".join([*scope, node.name]), node.lineno))
                visit(node.body, [*scope, node.name])
            elif isinstance(node, ast.ClassDef):
                visit(node.body, [*scope, node.name])
            else:
                if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
                    loops.append(node.lineno)
                for field in ("body", "orelse", "finalbody"):
                    block = getattr(node, field, None)
                    if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                        visit(block, scope)
                for handler in getattr(node, "handlers", ()) or ():
                    visit(handler.body, scope)
                for case in getattr(node, "cases", ()) or ():
                    visit(case.body, scope)

    visit(tree.body, [])

    def spread(items):
        return [items[0], items[len(items) // 2], items[-1]] if len(items) > 3 else items

    return sorted(set(spread(loops))), list(dict.fromkeys(spread(functions)))


def check_compile(paths: list[str], every: int = 1) -> dict:
    package = _agent()
    instrument = importlib.import_module(f"{package}.instrument")
    files = _python_files(paths, every)
    result = {"python": sys.version.split()[0], "files": len(files), "not_python": 0, "compiled": 0,
              "rewrites": 0, "failures": [], "seconds": 0.0}
    started = time.perf_counter()
    warnings.simplefilter("ignore")  # invalid escapes and the like: the file's own, said twice otherwise
    for path in files:
        try:
            source = path.read_bytes()
            compile(source, str(path), "exec", dont_inherit=True)
            tree = ast.parse(source, str(path))
        except (SyntaxError, ValueError, RecursionError, MemoryError, OSError):
            result["not_python"] += 1  # this Python does not compile it: not the rewrite's business
            continue
        result["compiled"] += 1
        loops, functions = _steps_of(tree)
        rewrites = [dict(regions=True), dict(regions=False)]
        rewrites += [dict(regions=True, step_line=line) for line in loops]
        rewrites += [dict(regions=True, step_function=name, step_line=line) for name, line in functions]
        for how in rewrites:
            result["rewrites"] += 1
            try:
                instrument.compile_module(source, str(path), "f0", **how)
            except Exception as e:  # noqa: BLE001 (every failure is a finding of this benchmark)
                result["failures"].append({"file": str(path), "how": {k: v for k, v in how.items()},
                                           "error": f"{type(e).__name__}: {e}"[:300]})
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result


# -- running programs plain and rewritten ----------------------------------------------------------
def _install(root: str):
    """Rewrite every module under `root` from now on, as the agent does for a workspace."""
    package = _agent()
    program = importlib.import_module(f"{package}.program")
    protocol = importlib.import_module(f"{package}.protocol")
    files = program.ProgramFiles(root, protocol.Target(path=os.path.join(root, "<no step>.py"), line=1))
    program.install_import_hook(files, NullRuntime())
    return files


def _outcomes(module: str) -> list[list[str]]:
    import unittest

    class Recorder(unittest.TestResult):
        def __init__(self):
            super().__init__()
            self.seen: list[list[str]] = []

        def addSuccess(self, test):
            self.seen.append([test.id(), "ok"])

        def addFailure(self, test, err):
            self.seen.append([test.id(), "failure"])

        def addError(self, test, err):
            self.seen.append([str(test.id()), "error: " + err[0].__name__])

        def addSkip(self, test, reason):
            self.seen.append([test.id(), "skipped"])

        def addExpectedFailure(self, test, err):
            self.seen.append([test.id(), "expected failure"])

        def addUnexpectedSuccess(self, test):
            self.seen.append([test.id(), "unexpected success"])

    suite = unittest.defaultTestLoader.loadTestsFromName(module)
    result = Recorder()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        suite.run(result)
    return sorted(result.seen)


def _doctests(path: str, files=None) -> dict:
    """The file's doctests; with `files` (the agent's ProgramFiles), the file rewritten as a workspace
    module first. Object addresses in the output (`at 0x7f...`) differ from run to run: left out."""
    import doctest
    import re

    name = "_corpus_" + Path(path).stem
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        if files is None:
            spec.loader.exec_module(module)
        else:
            module.__dict__["__stepscope__"] = NullRuntime()
            exec(files.compile(Path(path).read_bytes(), path), module.__dict__)
        failed, attempted = doctest.testmod(module, verbose=False, report=True)
    return {"attempted": attempted, "failed": failed, "output": re.sub(r"0x[0-9a-f]+", "0x...", out.getvalue())}


def _child(argv: list[str]) -> None:
    """`_run plain|rewritten ROOT unittest MODULE` / `... doctest FILE`: one program, its outcome as JSON."""
    how, root, kind, target = argv
    sys.path.insert(0, root)
    files = _install(root) if how == "rewritten" else None
    outcome = _outcomes(target) if kind == "unittest" else _doctests(target, files)
    notes = list(files.notes) if files is not None else []
    rewritten = len(files.files) - 1 if files is not None else 0  # the file table's entries but the no-step one
    sys.__stdout__.write(json.dumps({"outcome": outcome, "notes": notes, "modules_rewritten": rewritten}) + "\n")


def _run(how: str, root: str, kind: str, target: str, timeout: float) -> dict:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}
    try:
        r = subprocess.run([sys.executable, __file__, "_run", how, root, kind, target], capture_output=True,
                           text=True, timeout=timeout, env=env, cwd=root)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
    if r.returncode != 0 or not lines:
        return {"error": f"exit {r.returncode}: {r.stderr.strip().splitlines()[-1:] or ''}"}
    return json.loads(lines[-1])


def compare(kind: str, targets: list[str], root: str | None, timeout: float = 300) -> dict:
    """Each target run plain and rewritten: the same outcome, or a difference listed."""
    result = {"python": sys.version.split()[0], "kind": kind, "programs": 0, "same": 0, "differ": [],
              "not_run": [], "timed_out": [], "units": 0, "rewrite_notes": [],
              "modules_rewritten": 0}
    for target in targets:
        where = root or (os.path.dirname(os.path.abspath(target)) if kind == "doctest" else _stdlib_root())
        plain = _run("plain", where, kind, target, timeout)
        if "error" in plain:
            result["not_run"].append({"program": target, "why": plain["error"]})
            continue
        rewritten = _run("rewritten", where, kind, target, timeout)
        result["programs"] += 1
        result["rewrite_notes"].extend(rewritten.get("notes") or [])
        result["modules_rewritten"] += rewritten.get("modules_rewritten") or 0
        units = len(plain["outcome"]) if kind == "unittest" else plain["outcome"]["attempted"]
        result["units"] += units
        if rewritten.get("outcome") == plain["outcome"]:
            result["same"] += 1
            continue
        if "timed out" in rewritten.get("error", ""):
            # the rewritten program runs a no-op region around each of its statements: a pure-Python
            # hot loop can take several times as long, which says nothing about its outcome
            result["timed_out"].append(target)
            continue
        if "error" in rewritten:
            diff = rewritten["error"]
        elif kind == "unittest":
            before, after = dict(map(tuple, plain["outcome"])), dict(map(tuple, rewritten["outcome"]))
            diff = [f"{t}: {before.get(t)} -> {after.get(t)}" for t in sorted(set(before) | set(after))
                    if before.get(t) != after.get(t)][:20]
        else:
            diff = {"plain": plain["outcome"], "rewritten": rewritten["outcome"]}
        result["differ"].append({"program": target, "difference": diff})
    return result


def _stdlib_root() -> str:
    import test

    return os.path.dirname(os.path.dirname(test.__file__))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_run":
        _child(argv[1:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("check", choices=["compile", "unittest", "doctest"])
    parser.add_argument("targets", nargs="+")
    parser.add_argument("--every", type=int, default=1, help="take every Nth file (a slice)")
    parser.add_argument("--root", help="unittest: the folder whose modules are rewritten")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--json", help="write the result here too")
    args = parser.parse_args(argv)
    if args.check == "compile":
        result = check_compile(args.targets, args.every)
        print(f"Python {result['python']}: {result['files']} files, {result['compiled']} compile here, "
              f"{result['rewrites']} rewrites, {len(result['failures'])} failed, in {result['seconds']} s")
        for failure in result["failures"][:50]:
            print(f"  {failure['file']} {failure['how']}: {failure['error']}")
        failed = bool(result["failures"])
    else:
        targets = args.targets
        if args.check == "doctest":
            targets = [str(p) for p in _python_files(targets, args.every)]
        result = compare(args.check, targets, args.root, args.timeout)
        print(f"Python {result['python']}: {result['programs']} programs ({result['units']} "
              f"{'tests' if args.check == 'unittest' else 'doctest examples'}; {result['modules_rewritten']} modules "
              f"rewritten) run plain and rewritten: "
              f"{result['same']} the same, {len(result['differ'])} differ, {len(result['timed_out'])} out of time "
              f"rewritten, {len(result['not_run'])} not run plain")
        for d in result["differ"]:
            print(f"  {d['program']}: {d['difference']}")
        for note in result["rewrite_notes"]:
            print(f"  note: {note}")
        failed = bool(result["differ"])
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
