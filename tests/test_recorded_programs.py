"""The GPU recordings in tests/data name lines of benchmarks/gpu_cases: those programs stay as recorded.

The recordings (tests/data/compiled/h200_*, tests/data/traces/gpu_cases) were made on a GPU machine,
which CI does not have, so they cannot be made again here. They point at the one copy of their
programs, benchmarks/gpu_cases, and tests/data/recorded_programs.json holds each program's SHA-256
as recorded: a change to a recorded program would move the lines the traces name and make the
recordings' tests fail far from the cause, so it fails here, by name.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MANIFEST = REPO / "tests" / "data" / "recorded_programs.json"


def recorded_sources() -> set[str]:
    """Every program a GPU recording in tests/data names, as a path from the repository root."""
    named = set()
    for table in (REPO / "tests" / "data").glob("**/files.json"):
        doc = json.loads(table.read_text())
        # "." is the repository (the frozen run folders' loaders put it back there); else from the folder
        root = REPO if doc["root"] == "." else (table.parent / doc["root"]).resolve()
        for path in doc["files"].values():
            source = (root / path).resolve()
            if source.is_relative_to(REPO / "benchmarks"):
                named.add(source.relative_to(REPO).as_posix())
    return named


def test_every_program_a_recording_names_is_as_it_was_recorded():
    programs = json.loads(MANIFEST.read_text())["programs"]
    changed = [path for path, digest in programs.items()
               if hashlib.sha256((REPO / path).read_bytes()).hexdigest() != digest]
    assert not changed, (f"{', '.join(changed)} changed since the GPU recordings that name its lines: record them "
                         "again on a GPU (benchmarks/gpu_cases/record.sh, record_compiled.sh) and update "
                         f"{MANIFEST.relative_to(REPO)}, or make the change in a new program")


def test_the_manifest_holds_every_program_the_recordings_name():
    named = recorded_sources()
    assert {"benchmarks/gpu_cases/compiled_mlp.py", "benchmarks/gpu_cases/const_copy.py"} <= named
    assert named == set(json.loads(MANIFEST.read_text())["programs"])
