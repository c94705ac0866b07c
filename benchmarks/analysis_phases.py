"""Where the time of `stepscope analyze` goes, phase by phase, for one trace.

    PYTHONPATH=server python benchmarks/analysis_phases.py TRACE

Prints the seconds of: imports, the read (default workers), links and steps, the evidence's shared
window, then the side-by-side part as `report.py` runs it (the operator half in a forked child
while this process computes the moment half and the attribution, and the wait for the child), and
last the operator half alone in this process, for comparison.
"""

from __future__ import annotations

import sys
import time

t0 = time.perf_counter()
from pathlib import Path  # noqa: E402

from stepscope.analysis import parallel  # noqa: E402
from stepscope.analysis.attribution import attribute  # noqa: E402
from stepscope.analysis.findings import Thresholds  # noqa: E402
from stepscope.analysis.findings import evidence  # noqa: E402
from stepscope.analysis.links import build_links  # noqa: E402
from stepscope.analysis.steps import find_steps  # noqa: E402
from stepscope.trace import read_trace  # noqa: E402


def main() -> None:
    t1 = time.perf_counter()
    trace = read_trace(Path(sys.argv[1]))
    t2 = time.perf_counter()
    links = build_links(trace)
    steps = find_steps(trace, links)
    t3 = time.perf_counter()
    win = evidence.evidence_window(trace, links, steps, file_table=None, source_root=None,
                                   batch_read_patterns=Thresholds().batch_read_patterns)
    t4 = time.perf_counter()
    with parallel.alongside(evidence.operator_evidence, trace, links, win) as operators:
        evidence.moment_evidence(trace, links, steps, win, None)
        t5 = time.perf_counter()
        attribute(trace, links, steps, file_table=None, source_root=None)
        t6 = time.perf_counter()
        operators.result()
        t7 = time.perf_counter()
    evidence.operator_evidence(trace, links, win)
    t8 = time.perf_counter()
    print(f"{len(trace)} events; imports {t1 - t0:.2f} s, read {t2 - t1:.2f} s, links and steps {t3 - t2:.2f} s, "
          f"evidence window {t4 - t3:.2f} s; side by side: moment half {t5 - t4:.2f} s and attribution "
          f"{t6 - t5:.2f} s here, then {t7 - t6:.2f} s waiting for the child "
          f"({'forked' if parallel.can_fork() else 'not forked: computed here'}); "
          f"the operator half alone: {t8 - t7:.2f} s")


if __name__ == "__main__":
    main()
