"""When each stage of one `stepscope analyze TRACE --json` starts and ends, as it really runs.

    PYTHONPATH=server python benchmarks/analysis_timeline.py TRACE

Runs the CLI command in this process (threads and forked children as by default, stdout
discarded) and prints, in seconds since start: imports done, then each stage's start (`>`) and end
(`<`): the read, links, steps, the evidence window, the moment half, the waits for the results of
the children (the attribution, the operator half), the report, the findings and the JSON. Where a
result is computed here rather than in a child, its wait is the computation.
`benchmarks/analysis_phases.py` times the same stages one after another instead.
"""

from __future__ import annotations

import os
import sys
import time

T0 = time.perf_counter()
MARKS: list[tuple[str, float]] = []


def mark(what: str) -> None:
    MARKS.append((what, time.perf_counter() - T0))


from stepscope import cli, jsonio  # noqa: E402
from stepscope.analysis import parallel  # noqa: E402
from stepscope.analysis import report  # noqa: E402

mark("imports")


def timed(module, name: str, label: str | None = None) -> None:
    """Wrap `module.name` so its start and end are marked."""
    fn = getattr(module, name)
    label = label or name

    def wrapper(*args, **kwargs):
        mark(f"{label} >")
        try:
            return fn(*args, **kwargs)
        finally:
            mark(f"{label} <")

    setattr(module, name, wrapper)


def main() -> None:
    for name in ("read_trace", "build_links", "find_steps", "evidence_window", "moment_evidence", "_report",
                 "find"):
        timed(report, name)
    timed(jsonio, "dumps")
    result = parallel._Alongside.result

    def waited(self):
        mark(f"wait {self.fn.__name__} >")
        try:
            return result(self)
        finally:
            mark(f"wait {self.fn.__name__} <")

    parallel._Alongside.result = waited
    with open(os.devnull, "w") as devnull:
        stdout, sys.stdout = sys.stdout, devnull
        try:
            code = cli.main(["analyze", sys.argv[1], "--json"])
        finally:
            sys.stdout = stdout
    mark("done")
    print(f"exit {code}; " + "  ".join(f"{what} {t:.3f}" for what, t in MARKS))


if __name__ == "__main__":
    main()
