"""Run the user's program as `python script.py` or `python -m module` would, with its workspace
modules instrumented in memory.

Invariants:
- Files on disk are never modified and no bytecode is written for an instrumented module (its
  code object is rebuilt from the rewritten tree; `__pycache__` is neither read nor written).
- `sys.argv`, `sys.path[0]`, `__name__ == "__main__"`, `__file__` and `__spec__` look as they do
  under plain Python, so argparse, relative imports and multiprocessing's spawn (which re-imports
  `__main__` by path) behave as usual.
- Files inside the workspace root are instrumented, never installed packages; the one exception is
  the module that holds the step when the step is named in an installed package
  (`--function transformers.trainer:Trainer.training_step`): that module alone, and in it only the
  step (instrument.py's `step_only`). The file table names it by its absolute path and says which
  package it belongs to (`packages`), so the analysis can tell the package's time from the user's.
- A step module that was imported before the program started (by the agent itself: torch's own
  modules) cannot be rewritten any more: the run ends at once with the reason (LoopNotFound).
- A workspace module the rewrite cannot compile (instrument.InstrumentError) runs as it is, and
  `notes` says which and why; the step's own module then runs with the step boundaries alone
  (its step is still timed, without line figures).
- `__stepscope__` is in each instrumented module's globals and, for code that rebuilds a function
  with other globals, in builtins too.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import runpy
import sys
import types
from typing import Any

from .instrument import RUNTIME_NAME, InstrumentError, Runtime, compile_module
from .protocol import Target

_NOT_WORKSPACE = {"site-packages", "dist-packages", "node_modules", "__pypackages__"}
# Stepscope's own files are never the user's, even when the workspace is Stepscope's source.
_STEPSCOPE_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def package_of(real_path: str, module: str | None = None) -> str:
    """The installed package a file belongs to: its module's top-level name when the import system
    named it, else the folder right under site-packages (dist-packages), else the file's folder."""
    if module and module != "__main__":
        return module.split(".")[0]
    parts = real_path.split(os.sep)
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] in ("site-packages", "dist-packages"):
            name = parts[i + 1]
            return name[:-3] if name.endswith(".py") else name
    return os.path.basename(os.path.dirname(real_path)) or real_path


class ProgramFiles:
    """Which files of the program are the user's, their ids in the file table, and where the step
    is. `regions`: whether the rewrite adds regions (instrument.py) or the step boundaries only."""

    def __init__(self, root: str, step: Target, *, regions: bool = True):
        self.root = os.path.realpath(root)
        self.step_path = os.path.realpath(step.path)
        self.step_line: int | None = step.line
        self.step_function: str | None = step.function
        self.regions = regions
        self.files: dict[str, str] = {}  # real path → file id
        self.file_id(self.step_path)  # the step's file is always f0
        self.notes: list[str] = []  # modules that ran without their lines instrumented, and why
        # the step's module when it is no file of the workspace (an installed package's): its package
        self.step_package: str | None = None if self.in_workspace(self.step_path) else package_of(self.step_path)

    def file_id(self, real_path: str) -> str:
        if real_path not in self.files:
            self.files[real_path] = f"f{len(self.files)}"
        return self.files[real_path]

    def owns(self, path: str) -> bool:
        """Whether the file is instrumented: a workspace module, or the step's own module."""
        real = os.path.realpath(path)
        return real == self.step_path or self.in_workspace(real)

    def in_workspace(self, path: str) -> bool:
        """Whether the file is one of the workspace's own modules (not an environment's, not Stepscope's)."""
        real = os.path.realpath(path)
        if not real.endswith(".py") or real.startswith(_STEPSCOPE_PACKAGE + os.sep):
            return False
        if real != self.root and not real.startswith(self.root + os.sep):
            return False
        parts = os.path.relpath(real, self.root).split(os.sep)[:-1]
        return not any(p in _NOT_WORKSPACE or p.startswith(".") or p in ("venv", "env") for p in parts)

    def compile(self, source: bytes, path: str, module: str | None = None):
        real = os.path.realpath(path)
        is_step = real == self.step_path
        step = dict(step_line=self.step_line, step_function=self.step_function) if is_step else {}
        if is_step and self.step_package is not None:  # an installed package's module: its step only
            self.step_package = package_of(real, module)
            step["step_only"] = True
        shown = os.path.relpath(real, self.root)
        try:
            return compile_module(source, path, self.file_id(real), regions=self.regions, **step)
        except InstrumentError as e:
            if not (is_step and self.regions):
                if is_step:
                    raise
                self.notes.append(f"{shown} ran without its lines timed: {e}")
                return compile(source, path, "exec", dont_inherit=True)
            reason = str(e)
        code = compile_module(source, path, self.file_id(real), regions=False, **step)
        self.notes.append(f"{shown}, the step's file, ran with its step timed but without its lines: {reason}")
        return code

    def table(self) -> dict[str, Any]:
        """files.json: each instrumented file by id, workspace-relative (POSIX) when it lies in the
        root, else absolute; `packages`: the ids of files of installed packages, with their package."""
        def shown(path: str) -> str:
            rel = os.path.relpath(path, self.root)
            return (path if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel).replace(os.sep, "/")

        table: dict[str, Any] = {"root": self.root, "files": {fid: shown(p) for p, fid in self.files.items()}}
        if self.step_package is not None:
            table["packages"] = {self.files[self.step_path]: self.step_package}
        return table

    def step_module_loaded(self) -> str | None:
        """The name of an already imported module whose file is the step's (it cannot be rewritten
        any more), or None."""
        for name, module in list(sys.modules.items()):
            file = getattr(module, "__file__", None)
            if isinstance(file, str) and name != "__main__" and os.path.realpath(file) == self.step_path:
                return name
        return None


class _InstrumentingLoader(importlib.machinery.SourceFileLoader):
    def __init__(self, fullname: str, path: str, ws: ProgramFiles, runtime: Runtime):
        super().__init__(fullname, path)
        self._ws, self._runtime = ws, runtime

    def get_code(self, fullname: str):  # never reads or writes __pycache__
        return self._ws.compile(self.get_data(self.path), self.path, fullname)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__dict__[RUNTIME_NAME] = self._runtime
        super().exec_module(module)


class _WorkspaceFinder(importlib.abc.MetaPathFinder):
    """Hands out the instrumenting loader for source modules inside the workspace."""

    def __init__(self, ws: ProgramFiles, runtime: Runtime):
        self._ws, self._runtime = ws, runtime

    def find_spec(self, fullname, path=None, target=None):
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            try:
                spec = finder.find_spec(fullname, path, target)
            except Exception:
                continue
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if (spec.origin and isinstance(loader, importlib.machinery.SourceFileLoader)
                and self._ws.owns(spec.origin)):
            spec.loader = _InstrumentingLoader(fullname, spec.origin, self._ws, self._runtime)
            return spec
        return None


def install_import_hook(ws: ProgramFiles, runtime: Runtime) -> None:
    import builtins

    loaded = ws.step_module_loaded() if ws.step_package is not None else None
    if loaded is not None:
        from .instrument import LoopNotFound

        raise LoopNotFound(f"the step's module {loaded} was imported before the program started (Stepscope's agent "
                           "imports torch first), so it cannot be instrumented: name a function of the program, or "
                           "of a package the program imports itself")
    setattr(builtins, RUNTIME_NAME, runtime)  # for a function rebuilt with other globals
    sys.meta_path.insert(0, _WorkspaceFinder(ws, runtime))


def run_script(path: str, argv: list[str], ws: ProgramFiles, runtime: Runtime) -> None:
    """Execute `path` as __main__, instrumented like any workspace module."""
    path = os.path.abspath(path)
    sys.argv = [path, *argv]
    sys.path[0] = os.path.dirname(path)
    main = types.ModuleType("__main__")
    main.__dict__.update({"__file__": path, "__builtins__": __builtins__, "__spec__": None,
                          "__loader__": None, "__package__": None, "__cached__": None,
                          RUNTIME_NAME: runtime})
    with open(path, "rb") as f:
        source = f.read()
    if ws.owns(path):
        code = ws.compile(source, path)
    else:
        code = compile(source, path, "exec", dont_inherit=True)
    install_import_hook(ws, runtime)
    saved_main = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        if saved_main is not None:
            sys.modules["__main__"] = saved_main


def run_module(name: str, argv: list[str], ws: ProgramFiles, runtime: Runtime) -> None:
    install_import_hook(ws, runtime)
    sys.argv = [name, *argv]
    sys.path[0] = os.getcwd()
    runpy.run_module(name, init_globals={RUNTIME_NAME: runtime}, run_name="__main__", alter_sys=True)
