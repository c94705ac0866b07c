"""Run folders of benchmarks/gpu_cases recorded on a GPU machine, frozen into tests/data, and loaded back.

    python -m tests.analysis.gpu_cases RUNS_DIR NAME...

copies each run folder RUNS_DIR/NAME (as benchmarks/gpu_cases/record.sh writes them) into
`tests/data/traces/gpu_cases/NAME/`: `trace.json.gz`, `files.json` and `scenario.json`, with the
capture machine's workspace root replaced by this repository's `benchmarks/gpu_cases` (the cases'
sources) and its interpreter by its name, so no machine path is kept. `load_case` copies one back into a temporary folder with the
root pointing at this repository, so lines resolve to `benchmarks/gpu_cases/*.py`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "traces" / "gpu_cases"
SOURCES = "benchmarks/gpu_cases"
MAX_BYTES = 300_000


def _rebase(value, old: str, new: str):
    if isinstance(value, str):
        return new + value[len(old):] if value == old or value.startswith(old + "/") else value
    if isinstance(value, list):
        return [_rebase(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _rebase(v, old, new) for k, v in value.items()}
    return value


def freeze(run: Path, dest: Path) -> int:
    dest.mkdir(parents=True, exist_ok=True)
    with (run / "trace.json").open("rb") as src, gzip.open(dest / "trace.json.gz", "wb", compresslevel=9) as out:
        shutil.copyfileobj(src, out)
    table = json.loads((run / "files.json").read_text())
    root = table["root"]
    files = {fid: f"{SOURCES}/{path}" for fid, path in table["files"].items()}
    (dest / "files.json").write_text(json.dumps({"root": ".", "files": files}, indent=1) + "\n")
    scenario = _rebase(json.loads((run / "scenario.json").read_text()), root, f"./{SOURCES}")
    scenario = _rebase(scenario, str(run), f"./{SOURCES}/runs/{run.name}")
    program = scenario.get("program") or {}
    if str(program.get("python", "")).startswith("/"):  # the capture machine's interpreter: not kept
        program["python"] = Path(program["python"]).name
    (dest / "scenario.json").write_text(json.dumps(scenario, indent=1) + "\n")
    size = (dest / "trace.json.gz").stat().st_size
    if size > MAX_BYTES:
        raise SystemExit(f"{dest}: trace is {size} bytes compressed, over {MAX_BYTES}")
    return size


def load_case(name: str, tmp: Path) -> Path:
    """A copy of the committed run folder `name`, its paths pointing at this repository."""
    run = tmp / name
    shutil.copytree(DATA / name, run)
    table = json.loads((run / "files.json").read_text())
    (run / "files.json").write_text(json.dumps({**table, "root": str(REPO)}))
    scenario = _rebase(json.loads((run / "scenario.json").read_text()), ".", str(REPO))
    (run / "scenario.json").write_text(json.dumps(scenario))
    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", type=Path)
    parser.add_argument("names", nargs="+")
    args = parser.parse_args()
    for name in args.names:
        print(f"{name}: {freeze(args.runs / name, DATA / name)} bytes")


if __name__ == "__main__":
    main()
