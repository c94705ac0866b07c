"""Run folders of benchmarks/gpu_cases recorded on a GPU machine, frozen into tests/data, and loaded back.

    python -m tests.analysis.gpu_cases RUNS_DIR NAME...

freezes each run folder RUNS_DIR/NAME (as benchmarks/gpu_cases/record.sh writes them) into
`tests/data/traces/gpu_cases/NAME/` (tests/frozen_runs.py), with the recording's workspace (a copy
of benchmarks/gpu_cases) made this repository's `benchmarks/gpu_cases`. `load_case` copies one back
into a temporary folder, so lines resolve to `benchmarks/gpu_cases/*.py` (which
tests/test_recorded_programs.py keeps as recorded).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tests.frozen_runs import REPO, freeze, load

DATA = REPO / "tests" / "data" / "traces" / "gpu_cases"
SOURCES = "benchmarks/gpu_cases"
MAX_BYTES = 300_000

__all__ = ["DATA", "REPO", "load_case"]


def load_case(name: str, tmp: Path) -> Path:
    """A copy of the committed run folder `name`, its paths pointing at this repository."""
    return load(DATA, name, tmp)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", type=Path)
    parser.add_argument("names", nargs="+")
    args = parser.parse_args()
    for name in args.names:
        print(f"{name}: {freeze(args.runs / name, DATA / name, max_bytes=MAX_BYTES, sources=SOURCES)} bytes")


if __name__ == "__main__":
    main()
