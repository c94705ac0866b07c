"""The public Kineto traces that lie beside the repository (`../shared/traces`), for tests on real traces.

A user's clone has no such folder: every test that needs it is then skipped with the reason, never
left out of the collection in silence. `STEPSCOPE_TEST_TRACES=<folder>` reads the traces from
another folder (one holding `public/`); set to an empty value it hides them, to see what a clone
without them runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterable

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data" / "traces"  # small traces shipped with the tests

_GIVEN = os.environ.get("STEPSCOPE_TEST_TRACES")
HIDDEN = _GIVEN == ""
#: the folder of both public corpora (whether or not it is there: test with PRESENT)
SHARED = Path(_GIVEN or REPO.parent / "shared" / "traces")
#: the public traces, and the second set of real traces that exposed defects (PROVENANCE.md in each)
PUBLIC = SHARED / "public"
PUBLIC2 = SHARED / "public2"
PRESENT = not HIDDEN and PUBLIC.is_dir()
ABSENT_REASON = ("public trace corpus hidden (STEPSCOPE_TEST_TRACES is empty)" if HIDDEN else
                 f"public trace corpus not present at {PUBLIC} (set STEPSCOPE_TEST_TRACES to the folder holding public/)")

#: for a test, or a module's `pytestmark`, that reads the public traces
needs_public = pytest.mark.skipif(not PRESENT, reason=ABSENT_REASON)

#: files beside the traces that are not traces, and a trace too large for a unit test
# a run folder's records beside its trace (a frozen run keeps its file table, scenario and unprofiled timings)
NOT_TRACES = ("files.json", "scenario.json", "timings.json", "benchmark_simple_add_et.json.gz")


def public_files(pattern: str = "**/*.json*") -> list[Path]:
    """The public traces matching `pattern` (relative to `public/`), sorted; [] when absent."""
    if not PRESENT:
        return []
    return sorted(p for p in PUBLIC.glob(pattern) if p.is_file() and p.name not in NOT_TRACES)


def corpus_files(pattern: str = "**/*.json*") -> list[Path]:
    """The traces of both public corpora matching `pattern`, sorted; [] when absent."""
    if not PRESENT:
        return []
    roots = [root for root in (PUBLIC, PUBLIC2) if root.is_dir()]
    return sorted(p for root in roots for p in root.glob(pattern) if p.is_file() and p.name not in NOT_TRACES)


def params(paths: Iterable[Path], ids: Callable[[Path], str] = lambda p: p.name, *,
           from_public: bool = True) -> list:
    """`pytest.param`s of `paths`, and, when the public traces are absent, one more that is skipped
    with the reason: the cases that would have read them are counted, not silently left out."""
    out = [pytest.param(p, id=ids(p)) for p in paths]
    if from_public and not PRESENT:
        out.append(pytest.param(None, id="public-corpus", marks=pytest.mark.skip(reason=ABSENT_REASON)))
    return out
