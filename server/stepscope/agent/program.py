"""Run the user's program as `python script.py` or `python -m module` would, with one file's
step loop instrumented in memory.

Invariants: the file on disk is never modified, and no bytecode is written for the instrumented
module (its code object is built from the rewritten tree each time); `sys.argv`, `sys.path[0]`,
`__name__ == "__main__"` and `__file__` look as they do under plain Python, so argparse,
relative imports and multiprocessing's spawn (which re-imports `__main__` by path) behave.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import runpy
import sys
import types
from typing import Any

from .instrument import RUNTIME_NAME, compile_instrumented


class _InstrumentingLoader(importlib.machinery.SourceFileLoader):
    def __init__(self, fullname: str, path: str, *, line: int, file_id: str, runtime: Any):
        super().__init__(fullname, path)
        self._line, self._file_id, self._runtime = line, file_id, runtime

    def get_code(self, fullname: str):  # never reads or writes __pycache__
        source = self.get_data(self.path)
        return compile_instrumented(source, self.path, self._line, self._file_id)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__dict__[RUNTIME_NAME] = self._runtime
        super().exec_module(module)


class _TargetFinder(importlib.abc.MetaPathFinder):
    """Hands out the instrumenting loader for exactly one file, found by its real path."""

    def __init__(self, path: str, line: int, file_id: str, runtime: Any):
        self._path = os.path.realpath(path)
        self._line, self._file_id, self._runtime = line, file_id, runtime

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
        if spec.origin and os.path.realpath(spec.origin) == self._path:
            spec.loader = _InstrumentingLoader(
                fullname, spec.origin, line=self._line, file_id=self._file_id, runtime=self._runtime
            )
            return spec
        return None


def run_script(path: str, argv: list[str], target: dict[str, Any], runtime: Any) -> None:
    """Execute `path` as __main__; instrument it if it is the target file, else hook the import."""
    path = os.path.abspath(path)
    sys.argv = [path, *argv]
    sys.path[0] = os.path.dirname(path)
    main = types.ModuleType("__main__")
    main.__dict__.update({"__file__": path, "__builtins__": __builtins__, "__spec__": None,
                          "__loader__": None, "__package__": None, "__cached__": None})
    main.__dict__[RUNTIME_NAME] = runtime
    if os.path.realpath(target["path"]) == os.path.realpath(path):
        with open(path, "rb") as f:
            code = compile_instrumented(f.read(), path, target["line"], target["file_id"])
    else:
        install_import_hook(target, runtime)
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec", dont_inherit=True)
    saved_main = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        if saved_main is not None:
            sys.modules["__main__"] = saved_main


def run_module(name: str, argv: list[str], target: dict[str, Any], runtime: Any) -> None:
    install_import_hook(target, runtime)
    sys.argv = [name, *argv]
    sys.path[0] = os.getcwd()
    runpy.run_module(name, init_globals={RUNTIME_NAME: runtime}, run_name="__main__", alter_sys=True)


def install_import_hook(target: dict[str, Any], runtime: Any) -> None:
    sys.meta_path.insert(0, _TargetFinder(target["path"], target["line"], target["file_id"], runtime))
