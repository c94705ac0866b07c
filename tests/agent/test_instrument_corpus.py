"""A slice of the instrumenter's corpus benchmark (benchmarks/instrument_corpus.py) on code we did
not write: the standard library of the interpreters on this machine.

- Every file of the slice that Python compiles still compiles once rewritten, in every way the agent
  rewrites a module (a workspace module with and without regions, the module holding the step loop,
  the module holding the step function).
- The standard library's own tests of the language run plain and rewritten with the same outcome for
  every test, but for the two documented differences (docs/instrumenting.md): a test that traces
  its own line events, and one that depends on where exactly it hits the recursion limit.

The whole corpus (tens of thousands of files) is the benchmark's; its figures are in docs/instrumenting.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCHMARK = REPO / "benchmarks" / "instrument_corpus.py"
#: the language's own tests: grammar, scopes, pattern matching, generators, coroutines, classes...
LANGUAGE_TESTS = ["test.test_grammar", "test.test_scope", "test.test_patma", "test.test_named_expressions",
                  "test.test_global", "test.test_super", "test.test_with", "test.test_generators",
                  "test.test_coroutines", "test.test_exceptions", "test.test_class", "test.test_dataclasses",
                  "test.test_keywordonlyarg", "test.test_yield_from", "test.test_asyncgen", "test.test_unpack"]
#: what a rewrite cannot keep (docs/instrumenting.md): a test of the line events a tracer sees, and one
#: that recurses into its own except handlers at a recursion limit set ten calls deep
KNOWN_DIFFERENCES = ("test.test_patma.TestTracing.", "test.test_exceptions.ExceptionTests.test_recursion_in_except_handler")


def _interpreter(version: str) -> str | None:
    """A Python of `version` on this machine, other than the one running the tests."""
    for name in (f"python{version}",):
        for folder in os.environ.get("PATH", "").split(os.pathsep) + [str(p) for p in Path.home().glob(".pyenv/versions/*/bin")]:
            candidate = Path(folder) / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                probe = subprocess.run([str(candidate), "-c", "import sys; print(sys.version_info[:2])"],
                                       capture_output=True, text=True)
                if probe.returncode == 0 and probe.stdout.strip() == str(tuple(int(v) for v in version.split("."))):
                    return str(candidate)
    return None


def _compile(python: str, paths: list[str], every: int, tmp_path: Path) -> dict:
    out = tmp_path / "compile.json"
    r = subprocess.run([python, str(BENCHMARK), "compile", *paths, "--every", str(every), "--json", str(out)],
                       capture_output=True, text=True, timeout=900)
    assert out.is_file(), r.stderr[-2000:]
    return json.loads(out.read_text())


def test_every_file_of_a_slice_of_the_standard_library_still_compiles_rewritten(tmp_path: Path):
    stdlib = sysconfig.get_paths()["stdlib"]
    result = _compile(sys.executable, [stdlib], 80, tmp_path)
    assert result["compiled"] >= 120 and result["rewrites"] >= 4 * result["compiled"]
    assert result["failures"] == []
    syntax = [str(Path(stdlib) / "test" / f"{name}.py") for name in ("test_grammar", "test_patma", "test_syntax",
                                                                   "test_named_expressions", "test_coroutines")]
    result = _compile(sys.executable, [p for p in syntax if Path(p).is_file()], 1, tmp_path)
    assert result["compiled"] >= 4 and result["failures"] == []


@pytest.mark.parametrize("version", ["3.10", "3.12", "3.13"])
def test_the_rewrite_compiles_under_the_other_interpreters_the_agent_supports(version: str, tmp_path: Path):
    python = _interpreter(version)
    if python is None:
        pytest.skip(f"no Python {version} on this machine (the agent runs in the user's interpreter, >= 3.10)")
    stdlib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    grammar = [str(Path(stdlib) / "test" / f"{name}.py") for name in ("test_grammar", "test_patma")]
    result = _compile(python, [stdlib, *[p for p in grammar if Path(p).is_file()]], 300, tmp_path)
    assert result["python"].startswith(version) and result["compiled"] >= 8
    assert result["failures"] == []


def test_the_languages_own_tests_have_the_same_outcome_rewritten(tmp_path: Path):
    out = tmp_path / "unittest.json"
    subprocess.run([sys.executable, str(BENCHMARK), "unittest", *LANGUAGE_TESTS, "--json", str(out)],
                   capture_output=True, text=True, timeout=900)
    result = json.loads(out.read_text())
    assert result["not_run"] == [] and result["programs"] == len(LANGUAGE_TESTS) and result["units"] >= 1000
    assert result["modules_rewritten"] >= len(LANGUAGE_TESTS)  # each test module and what it imports
    unexplained = [(d["program"], change) for d in result["differ"] for change in d["difference"]
                   if not change.startswith(KNOWN_DIFFERENCES)]
    assert unexplained == []
    assert result["rewrite_notes"] == []  # every module of the tests was rewritten, none run as it is
