"""`python <agent folder> [SPEC_JSON]`: the agent as the program in a launcher's command line.

A run started by a launcher has its own copy of the agent in the run folder (`<run>/agent`), so
that the nodes need neither Stepscope nor the same install, and the agent is the run's version:
`torchrun … <run>/agent`, `srun … python <run>/agent`. The spec is the run folder's spec.json, the
one beside this folder, unless a path is given; the program and its arguments are in the spec, so
nothing else may follow. The rest is bootstrap.py's (loaded from this folder by its path).
"""

import importlib.util
import os
import sys


def _bootstrap():
    folder = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("_stepscope_bootstrap", os.path.join(folder, "bootstrap.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, folder


if __name__ == "__main__":
    bootstrap, folder = _bootstrap()
    if len(sys.argv) > 2:
        sys.stderr.write("stepscope: the agent takes one argument, the run's spec.json; the program's own arguments "
                         "are in the spec (give them to `stepscope profile` after `--`)\n")
        bootstrap.exit_with(70)
    bootstrap.exit_with(bootstrap.run(sys.argv[1] if len(sys.argv) > 1 else
                                      os.path.join(os.path.dirname(folder), "spec.json")))
