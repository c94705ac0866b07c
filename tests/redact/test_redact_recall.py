"""Recall on the labelled corpus (tests/redact/labelled.py): real traces with a fresh secret of
every kind planted in every place a trace carries strings, written in each layout, redacted by
`stepscope redact`. Every planted secret's string must change and no part of any secret may be
left anywhere in the copy (escapes undone, look-alikes folded); every decoy must come through
unchanged; the copy must check clean. benchmarks/redact_recall.py runs the whole corpus and
prints the table of docs/redact.md.
"""

from __future__ import annotations

import itertools
import json
import random
import zlib
from pathlib import Path

import pytest

from stepscope.redact.trace_file import check_trace, redact_trace
from tests import corpus
from tests.conftest import run_stepscope

from . import labelled

BASES = labelled.bases(corpus.SHARED if corpus.PRESENT else None)
CASES = list(zip(BASES, itertools.cycle(labelled.LAYOUTS)))


def _planted(tmp_path: Path, base: Path, layout: str) -> tuple[Path, list[labelled.Planted]]:
    doc = labelled.load(base)
    planted = labelled.plant(doc, random.Random(zlib.crc32(f"{base.name}/{layout}".encode())))
    src = tmp_path / "planted.json"
    src.write_text(labelled.LAYOUTS[layout](doc))
    return src, planted


def _misses(planted: list[labelled.Planted], copy: dict) -> list[tuple]:
    return [(o.planted.kind, o.planted.place, o.planted.text[:80], o.leaked[:1])
            for o in labelled.outcome(planted, copy) if not o.found or o.leaked]


@pytest.mark.parametrize("base, layout", CASES, ids=[f"{b.name}-{lay}" for b, lay in CASES])
def test_every_planted_secret_is_replaced_whole_and_no_decoy_is_touched(tmp_path: Path, base: Path, layout: str):
    src, planted = _planted(tmp_path, base, layout)
    # the judge sees a leak: before redaction, every secret is in the file and none is "found"
    before = labelled.outcome(planted, json.loads(src.read_text()))
    assert all(o.leaked and not o.found for o in before if o.planted.kind != "decoy")
    out = tmp_path / "copy.json"
    redact_trace(src, out)
    assert _misses(planted, json.loads(out.read_text())) == []
    assert not check_trace(out).unsafe  # the copy checks clean: nothing left that redact would change
    kinds = {p.kind for p in planted}
    assert kinds == {k.name for k in labelled.SECRETS} | {"decoy"}


def test_cli_redacts_the_planted_corpus_and_checks_the_copy_clean(tmp_path: Path):
    base, layout = CASES[-1]
    src, planted = _planted(tmp_path, base, layout)
    r = run_stepscope("redact", str(src), "--check", "--json", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert set(doc["counts"]) >= {"email", "token", "path", "host", "user", "input", "phone", "national-id", "birth-date"}
    shown = json.dumps(doc["secrets"])  # the report names each secret by a masked form, never shows it
    assert [part for p in planted for part in p.parts if len(part) > 3 and part in shown] == []
    out = tmp_path / "copy.json.gz"
    r = run_stepscope("redact", str(src), "-o", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert _misses(planted, labelled.load(out)) == []
    r = run_stepscope("redact", str(out), "--check", cwd=tmp_path)
    assert r.returncode == 0 and "nothing to redact" in r.stdout, r.stdout
