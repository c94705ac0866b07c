"""The analysis's forked side computation (analysis/parallel.py): same outcome as computing inline,
whatever happens in the child, and never a fork where one is unsafe."""

from __future__ import annotations

import glob
import json
import os
import sys
import threading
from pathlib import Path

import pytest

from stepscope.analysis import parallel
from stepscope.analysis.report import analyze
from tests import corpus

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the analysis forks on Linux only")

DATA = Path(__file__).resolve().parent.parent / "data" / "traces"
PUBLIC = corpus.PUBLIC


def whose_pid() -> int:
    return os.getpid()


def test_the_function_runs_in_a_child_and_its_result_comes_back() -> None:
    with parallel.alongside(whose_pid) as side:
        assert side.pid is not None
        assert side.result() not in (None, os.getpid())


def test_an_exception_in_the_function_is_raised_as_if_computed_here() -> None:
    def fails() -> None:
        raise ValueError("no steps in this window")

    with parallel.alongside(fails) as side:
        with pytest.raises(ValueError, match="no steps in this window"):
            side.result()


def test_a_child_that_dies_is_replaced_by_computing_here() -> None:
    parent = os.getpid()

    def dies_in_child() -> str:
        if os.getpid() != parent:
            os._exit(9)  # as if killed (out of memory)
        return "computed in the parent"

    with parallel.alongside(dies_in_child) as side:
        assert side.result() == "computed in the parent"


def test_a_result_that_does_not_pickle_is_computed_here() -> None:
    parent = os.getpid()

    def unpicklable():
        return (lambda: None) if os.getpid() != parent else "computed in the parent"

    with parallel.alongside(unpicklable) as side:
        assert side.result() == "computed in the parent"


def test_no_fork_while_another_thread_runs() -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        with parallel.alongside(whose_pid) as side:
            assert side.pid is None
            assert side.result() == os.getpid()
    finally:
        stop.set()
        other.join()


def test_no_fork_when_turned_off_or_not_worth_it(monkeypatch: pytest.MonkeyPatch) -> None:
    with parallel.alongside(whose_pid, worth_it=False) as side:
        assert side.result() == os.getpid()
    monkeypatch.setenv("STEPSCOPE_ANALYSIS_FORK", "0")
    with parallel.alongside(whose_pid) as side:
        assert side.result() == os.getpid()


def test_a_fork_that_fails_computes_here(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_memory() -> int:
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(os, "fork", no_memory)
    with parallel.alongside(whose_pid) as side:
        assert side.pid is None
        assert side.result() == os.getpid()


def test_leaving_without_the_result_reaps_the_child() -> None:
    def slow() -> None:
        threading.Event().wait(30)

    with parallel.alongside(slow) as side:
        pid = side.pid
        assert pid is not None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # already reaped: no zombie left behind


def traces() -> list[Path]:
    found = [DATA / "h200_sync", DATA / "h200_async"]
    found += sorted(Path(p) for p in glob.glob(str(PUBLIC / "**" / "*.json*"), recursive=True))[:12] if corpus.PRESENT else []
    return found


@pytest.mark.parametrize("cores", [2, 3])  # the evidence's operator half; from 3 cores, the attribution too
@pytest.mark.parametrize("trace", corpus.params(traces()))
def test_reports_are_the_same_with_parts_computed_in_children(trace: Path, cores: int,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    forks = []
    real_fork = os.fork

    def counted_fork() -> int:
        pid = real_fork()
        if pid:
            forks.append(pid)
        return pid

    monkeypatch.setattr(parallel, "MIN_EVENTS", 0)  # every trace forks
    monkeypatch.setattr(parallel, "cores", lambda: cores)
    monkeypatch.setattr(os, "fork", counted_fork)
    forked = analyze([trace])
    assert len(forks) == cores - 1, f"{len(forks)} parts computed in children"
    monkeypatch.setenv("STEPSCOPE_ANALYSIS_FORK", "0")
    inline = analyze([trace])
    assert json.dumps(forked, sort_keys=True) == json.dumps(inline, sort_keys=True)
