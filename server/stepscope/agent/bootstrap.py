"""Entry point of the agent process: `python bootstrap.py SPEC_JSON`.

Puts the folder that holds the `stepscope` package first on sys.path just long enough to import
the agent, then hands sys.path back to the program (whose own folder becomes sys.path[0], as under
`python script.py`). Exits through os._exit after flushing, so that a program's stray non-daemon
threads cannot keep a finished capture alive.
"""

import os
import sys
import time

_START = time.perf_counter()


def _run() -> int:
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path[0] = package_parent
    from stepscope.agent.main import main

    sys.path[0] = os.getcwd()  # replaced by the program's own folder before it runs
    return main(sys.argv[1], _START)


if __name__ == "__main__":
    code = _run()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
