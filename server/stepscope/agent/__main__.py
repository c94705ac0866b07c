"""`python <agent folder> [SPEC_JSON]`: the agent as the program in a launcher's command line.

A run started by a launcher has its own copy of the agent in the run folder (`<run>/agent`), so
that the nodes need neither Stepscope nor the same install, and the agent is the run's version:
`torchrun … <run>/agent`, `srun … python <run>/agent`. The spec is the run folder's spec.json, the
one beside this folder, unless a path is given; the program and its arguments are in the spec, so
nothing else may follow but the `--local-rank=N` (or `--local_rank=N`) that some launchers add to
their program's arguments (torch.distributed.launch, deepspeed): it is passed on to the program,
before its own arguments, where the launcher would have put it. The rest is bootstrap.py's (loaded
from this folder by its path).
"""

import importlib.util
import os
import re
import sys

#: the argument a launcher adds to its program's (torch.distributed.launch, deepspeed)
LAUNCHER_ARGUMENT = re.compile(r"--local[-_]rank=[0-9]+")


def _bootstrap():
    folder = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("_stepscope_bootstrap", os.path.join(folder, "bootstrap.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, folder


if __name__ == "__main__":
    bootstrap, folder = _bootstrap()
    given = sys.argv[1:]
    spec = given.pop(0) if given and not LAUNCHER_ARGUMENT.fullmatch(given[0]) else None
    if not all(LAUNCHER_ARGUMENT.fullmatch(word) for word in given):
        sys.stderr.write("stepscope: the agent takes one argument, the run's spec.json; the program's own arguments "
                         "are in the spec (give them to `stepscope profile` after `--`)\n")
        bootstrap.exit_with(70)
    bootstrap.exit_with(bootstrap.run(spec or os.path.join(os.path.dirname(folder), "spec.json"), tuple(given)))
