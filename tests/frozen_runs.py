"""Run folders frozen into tests/data, and loaded back: the one way the committed runs are made and read.

A frozen run keeps `trace.json.gz`, `files.json` and `scenario.json` (and `timings.json`, the steps
timed without the profiler after the window, where the run has them) with no path of the machine that
recorded it: the workspace root becomes "." (the repository, or `sources` in it) and the recording
interpreter its bare name. `load` copies one into a temporary folder with "." made this repository
again, so the lines a trace names resolve to the programs committed here.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def rebase(value: Any, old: str, new: str) -> Any:
    """Every string of a JSON value that is `old` or a path below it, moved to `new`."""
    if isinstance(value, str):
        return new + value[len(old):] if value == old or value.startswith(old + "/") else value
    if isinstance(value, list):
        return [rebase(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: rebase(v, old, new) for k, v in value.items()}
    return value


def freeze(run: Path, dest: Path, *, max_bytes: int, sources: str | None = None) -> int:
    """Freeze the run folder `run` into `dest`; `sources`: the repository folder that holds the
    recorded programs, where the recording's workspace was a copy of it. Returns the trace's
    compressed size, which must stay under `max_bytes` (a test fixture, not an archive)."""
    dest.mkdir(parents=True, exist_ok=True)
    with (run / "trace.json").open("rb") as src, gzip.open(dest / "trace.json.gz", "wb", compresslevel=9) as out:
        shutil.copyfileobj(src, out)
    if (run / "files.json").is_file():
        table = json.loads((run / "files.json").read_text())
        root, base = table["root"], f"./{sources}" if sources else "."
        files = {fid: f"{sources}/{path}" if sources else path for fid, path in table["files"].items()}
        (dest / "files.json").write_text(json.dumps({**table, "root": ".", "files": files}, indent=1) + "\n")
        scenario = rebase(json.loads((run / "scenario.json").read_text()), root, base)
        scenario = rebase(scenario, str(run), f"{base}/runs/{run.name}")  # a run folder outside the workspace
        program = scenario.get("program") or {}
        if str(program.get("python", "")).startswith("/"):  # the recording machine's interpreter: not kept
            program["python"] = Path(program["python"]).name
        (dest / "scenario.json").write_text(json.dumps(scenario, indent=1) + "\n")
    if (run / "timings.json").is_file():  # figures only: the real step the findings compare with
        shutil.copyfile(run / "timings.json", dest / "timings.json")
    size = (dest / "trace.json.gz").stat().st_size
    if size > max_bytes:
        raise SystemExit(f"{dest}: trace is {size} bytes compressed, over {max_bytes}: shrink the run")
    return size


def load(data: Path, name: str, tmp: Path) -> Path:
    """A copy of the frozen run folder `data/name` in `tmp`, its paths pointing at this repository."""
    run = tmp / name
    shutil.copytree(data / name, run)
    if (run / "files.json").is_file():
        table = json.loads((run / "files.json").read_text())
        (run / "files.json").write_text(json.dumps({**table, "root": str(REPO)}))
    if (run / "scenario.json").is_file():
        scenario = rebase(json.loads((run / "scenario.json").read_text()), ".", str(REPO))
        (run / "scenario.json").write_text(json.dumps(scenario))
    return run
