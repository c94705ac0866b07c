"""The committed scenario traces: freeze real run folders into tests/data, and load them back.

    python -m tests.findings.scenario_data SRC_DIR [--prefix gpu_]

freezes each run folder of SRC_DIR (as `examples/scenarios/capture_all.py` writes them) into
`tests/data/traces/scenarios/<prefix><name>/` (tests/frozen_runs.py; a plain trace folder, such as
`plain_profiler`, keeps only its trace). `load_run` copies one back into a temporary folder, so
lines resolve to `examples/scenarios/*.py`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tests.frozen_runs import REPO, freeze, load

DATA = REPO / "tests" / "data" / "traces" / "scenarios"
MAX_BYTES = 200_000

__all__ = ["DATA", "REPO", "load_run"]


def load_run(name: str, tmp: Path) -> Path:
    """A copy of the committed run folder `name`, its paths pointing at this repository."""
    return load(DATA, name, tmp)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("src", type=Path)
    parser.add_argument("--prefix", default="")
    args = parser.parse_args()
    for run in sorted(p for p in args.src.iterdir() if (p / "trace.json").is_file()):
        size = freeze(run, DATA / f"{args.prefix}{run.name}", max_bytes=MAX_BYTES)
        print(f"{args.prefix}{run.name}: {size} bytes")


if __name__ == "__main__":
    main()
