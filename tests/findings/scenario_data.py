"""The committed scenario traces: freeze real run folders into tests/data, and load them back.

    python -m tests.findings.scenario_data SRC_DIR [--prefix gpu_]

copies each run folder of SRC_DIR (as `examples/scenarios/capture_all.py` writes them) into
`tests/data/traces/scenarios/<prefix><name>/`: `trace.json.gz`, `files.json` and `scenario.json`,
with the absolute workspace root of the capture machine replaced by "." (a plain trace folder, such
as `plain_profiler`, keeps only its trace). `load_run` copies one back into a temporary folder with
the root pointing at this repository, so lines resolve to `examples/scenarios/*.py`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "traces" / "scenarios"
MAX_BYTES = 200_000


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
    if (run / "files.json").is_file():
        table = json.loads((run / "files.json").read_text())
        root = table["root"]
        (dest / "files.json").write_text(json.dumps({**table, "root": "."}, indent=1) + "\n")
        scenario = json.loads((run / "scenario.json").read_text())
        scenario = _rebase(scenario, root, ".")
        (dest / "scenario.json").write_text(json.dumps(scenario, indent=1) + "\n")
    size = (dest / "trace.json.gz").stat().st_size
    if size > MAX_BYTES:
        raise SystemExit(f"{dest}: trace is {size} bytes compressed, over {MAX_BYTES}: shrink the scenario")
    return size


def load_run(name: str, tmp: Path) -> Path:
    """A copy of the committed run folder `name`, its paths pointing at this repository."""
    src = DATA / name
    run = tmp / name
    shutil.copytree(src, run)
    for record in ("files.json", "scenario.json"):
        path = run / record
        if path.is_file():
            doc = json.loads(path.read_text())
            if record == "files.json":
                doc["root"] = str(REPO)
            else:
                doc = _rebase(doc, ".", str(REPO))
            path.write_text(json.dumps(doc))
    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("src", type=Path)
    parser.add_argument("--prefix", default="")
    args = parser.parse_args()
    for run in sorted(p for p in args.src.iterdir() if (p / "trace.json").is_file()):
        size = freeze(run, DATA / f"{args.prefix}{run.name}")
        print(f"{args.prefix}{run.name}: {size} bytes")


if __name__ == "__main__":
    main()
