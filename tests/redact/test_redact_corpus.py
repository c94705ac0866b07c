"""Every real trace of the public corpus and the test data: the redacted copy is a trace that
`stepscope analyze` reads to the same report (strings compared after redaction), nothing but true
secrets is found (no operator, kernel or module name), and the copy checks clean.

The public traces live outside the repository (`../shared/traces/...`); without them these
tests are skipped, saying so.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from stepscope.analysis.report import analyze
from stepscope.errors import StepscopeError
from stepscope.redact.detect import find_hits, redact_text
from stepscope.redact.trace_file import check_trace, redact_trace, trace_redactor, workspace_of
from stepscope.trace import read_trace

from ..corpus import DATA, corpus_files, needs_public

TEST_DATA = DATA
RUN_RECORDS = ("files.json", "scenario.json", "timings.json")  # a run folder's records beside its trace


def _traces(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.json*") if p.name not in RUN_RECORDS)


CORPUS = [p for p in corpus_files() if p.name not in RUN_RECORDS] + _traces(TEST_DATA)

# What a finding in the corpus may be: the secrets these public traces really hold.
TRUE_KINDS = {"path": ("home path", "user path"), "user": ("user name", "value of `started_by`", "value of `STARTED_BY`"),
              "host": ("host name", "IP address"), "token": ("Hugging Face token",)}


def _normalise(value: Any, redact) -> Any:
    if isinstance(value, str):
        return redact(value) or value
    if isinstance(value, list):
        return [_normalise(v, redact) for v in value]
    if isinstance(value, dict):
        return {k: _normalise(v, redact) for k, v in value.items()}
    return value


def _as_in_the_copy(redactor, trace_strings: set[str]):
    """A string of the original's report as the copy's report has it: a string of the trace (a label,
    a name) as the redaction decided it; a string the analysis wrote (a note, a finding's words)
    with what the trace's strings lost inside it, found by shape (a path, a host or user name): the
    analysis's own prose is no one's input."""
    def redact(text: str) -> str | None:
        if text in trace_strings:
            return redactor.redact(text)
        hits = find_hits(text, known=redactor.known)
        return redact_text(text, hits, redactor.placeholder) if hits else None
    return redact


def _without(report: dict) -> dict:
    """The report less what names the file rather than the run: its path and its size, and the
    source root it was given."""
    report = dict(report)
    report.pop("traces", None)
    report.pop("source_root", None)
    report["window"] = {k: v for k, v in report["window"].items() if k != "trace_bytes"}
    return report


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_copy_analyses_the_same_and_finds_only_true_secrets(tmp_path: Path, path: Path):
    try:
        original = read_trace(path)
    except StepscopeError:
        pytest.skip(f"{path.name} is not a trace (the reader refuses it)")
    # both analysed alone (a run folder's records would add to the original only)
    alone = tmp_path / "orig" / path.name
    alone.parent.mkdir()
    shutil.copy(path, alone)
    workspace = workspace_of(path)
    out = tmp_path / ("copy.json.gz" if path.name.endswith(".gz") else "copy.json")
    result = redact_trace(alone, out, workspace=workspace)
    for f in result.found:  # false positives: anything but the secrets these traces hold
        assert f.kind in TRUE_KINDS or f.kind == "workspace", (f.kind, f.what, f.excerpt)
        assert f.kind == "workspace" or f.what in TRUE_KINDS[f.kind], (f.kind, f.what, f.excerpt)
    redactor, inv = trace_redactor(original, workspace)
    assert len(read_trace(out)) == len(original)
    source_root = Path(workspace) if workspace and Path(workspace).is_dir() else None
    try:
        before = analyze([alone], source_root=source_root)
    except StepscopeError as e:
        with pytest.raises(StepscopeError) as again:
            analyze([out], source_root=source_root)
        assert str(again.value).split(": ", 1)[-1] == str(e).split(": ", 1)[-1]
        return
    after = analyze([out], source_root=source_root)
    assert _without(after) == _normalise(_without(before), _as_in_the_copy(redactor, set(inv.strings)))
    assert not check_trace(out, workspace=workspace).unsafe  # nothing left to redact


@needs_public
def test_no_name_of_work_is_ever_flagged_even_as_a_label():
    """Operator, kernel, runtime and Python frame names of the whole corpus, run through every
    detector as if they were labels (the strictest): none is flagged but a path in a frame."""
    names: set[str] = set()
    for path in CORPUS:
        try:
            t = read_trace(path)
        except StepscopeError:
            continue
        names.update(t.names)
    flagged = [n for n in names if any(h.kind != "path" for h in find_hits(n, strict=True))]
    assert len(names) > 4000
    assert flagged == []
