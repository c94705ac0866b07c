"""Analyse the trace files named on stdin, one per line, as `stepscope analyze` does (read, analyse,
render the text report, encode the JSON report, check its invariants: tests/analysis/invariants.py);
answer one JSON line per file.

Run by test_fuzz.py in a process of its own, so that a case that hangs is stopped from outside and a
case that takes too much memory is measured (`max_rss_kb`, this process's peak so far) or stopped by
the address-space limit given as the first argument (MB).
"""

from __future__ import annotations

import json
import resource
import sys
import traceback
from pathlib import Path


def peak_rss_kb() -> int:
    """This process's peak resident memory. From /proc (VmHWM): `ru_maxrss` would also count the
    memory of the process that started this one (Linux carries it across fork and exec)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main() -> None:
    limit = int(sys.argv[1]) << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from stepscope.analysis.render import render_text
    from stepscope.analysis.report import analyze
    from stepscope.errors import StepscopeError
    from stepscope.jsonio import dumps

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: the report's invariants
    from tests.analysis.invariants import violations

    for line in sys.stdin:
        path = Path(line.rstrip("\n"))
        try:
            report = analyze([path])
            answer = {"ok": True, "text": render_text(report), "json_bytes": len(dumps(report)),
                      "violations": violations(report)}
        except StepscopeError as e:
            answer = {"error": type(e).__name__, "exit_code": e.exit_code, "message": str(e)}
        except BaseException:  # what the test is there to find: any other exception is a defect
            answer = {"crash": traceback.format_exc()}
        answer["max_rss_kb"] = peak_rss_kb()
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
