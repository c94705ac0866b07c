"""Run the user's program as `python script.py` or `python -m module` would, with its workspace
modules instrumented in memory.

Invariants:
- Files on disk are never modified and no bytecode is written for an instrumented module (its
  code object is rebuilt from the rewritten tree; `__pycache__` is neither read nor written).
- `sys.argv`, `sys.path[0]`, `__name__ == "__main__"`, `__file__` and `__spec__` look as they do
  under plain Python, so argparse, relative imports and multiprocessing's spawn (which re-imports
  `__main__` by path) behave as usual.
- Only files inside the workspace root are instrumented, never installed packages.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import runpy
import sys
import types
from typing import Any

from .instrument import RUNTIME_NAME, Runtime, compile_module
from .protocol import Target

_NOT_WORKSPACE = {"site-packages", "dist-packages", "node_modules", "__pypackages__"}
# Stepscope's own files are never the user's, even when the workspace is Stepscope's source.
_STEPSCOPE_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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

    def file_id(self, real_path: str) -> str:
        if real_path not in self.files:
            self.files[real_path] = f"f{len(self.files)}"
        return self.files[real_path]

    def owns(self, path: str) -> bool:
        real = os.path.realpath(path)
        if not real.endswith(".py") or real.startswith(_STEPSCOPE_PACKAGE + os.sep):
            return False
        if real != self.root and not real.startswith(self.root + os.sep):
            return False
        parts = os.path.relpath(real, self.root).split(os.sep)[:-1]
        return not any(p in _NOT_WORKSPACE or p.startswith(".") or p in ("venv", "env") for p in parts)

    def compile(self, source: bytes, path: str):
        real = os.path.realpath(path)
        is_step = real == self.step_path
        return compile_module(
            source, path, self.file_id(real),
            step_line=self.step_line if is_step else None,
            step_function=self.step_function if is_step else None,
            regions=self.regions,
        )

    def table(self) -> dict[str, Any]:
        return {"root": self.root,
                "files": {fid: os.path.relpath(p, self.root).replace(os.sep, "/") for p, fid in self.files.items()}}


class _InstrumentingLoader(importlib.machinery.SourceFileLoader):
    def __init__(self, fullname: str, path: str, ws: ProgramFiles, runtime: Runtime):
        super().__init__(fullname, path)
        self._ws, self._runtime = ws, runtime

    def get_code(self, fullname: str):  # never reads or writes __pycache__
        return self._ws.compile(self.get_data(self.path), self.path)

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
    if ws.owns(path) or os.path.realpath(path) == ws.step_path:
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
