"""Entry point of the agent process: `python bootstrap.py SPEC_JSON` (or `python <agent folder>`,
through `__main__.py`, as a launcher's program).

Loads the folder this file is in as a package of its own, under the private name `PACKAGE`, and
puts nothing of Stepscope on sys.path: the agent's modules can import each other, the standard
library and torch, and nothing else of Stepscope (a module that tried would fail here, in every
run, not only where Stepscope happens to be installed). sys.path[0] is the working folder until the
program's own folder replaces it, as under `python script.py`.

Exits through os._exit after flushing, so that a program's stray non-daemon threads cannot keep a
finished capture alive.
"""

import importlib
import importlib.util
import os
import sys
import time

_START = time.perf_counter()

PACKAGE = "_stepscope_agent"


def load_agent() -> object:
    """The agent package, loaded from this file's folder as `PACKAGE`."""
    if PACKAGE in sys.modules:
        return sys.modules[PACKAGE]
    folder = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(PACKAGE, os.path.join(folder, "__init__.py"),
                                                  submodule_search_locations=[folder])
    package = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = package
    spec.loader.exec_module(package)
    return package


def run(spec_path: str, launcher_args: tuple = ()) -> int:
    """Run the spec's program; `launcher_args`: what a launcher added to its program's arguments,
    passed on before the program's own."""
    sys.path[0] = os.getcwd()  # not this folder: the agent's modules are reachable only as PACKAGE's
    load_agent()
    main = importlib.import_module(f"{PACKAGE}.main").main
    return main(spec_path, _START, launcher_args)


def exit_with(code: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_with(run(sys.argv[1]))
