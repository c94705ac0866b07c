"""Every profile run also times the step without the profiler, in the same process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from stepscope.analysis.distortion import window_overlap
from stepscope.history.store import History
from tests.analysis.invariants import violations
from tests.conftest import run_stepscope

from .programs import SLEEPY, WORKER_FED, write

pytestmark = [pytest.mark.torch, pytest.mark.slow]


def test_a_profile_reports_the_unprofiled_step_and_the_distortion(workspace: Path):
    r = run_stepscope("profile", "train_cpu.py", "--json", cwd=workspace)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    unprofiled = report["unprofiled"]
    assert unprofiled["passes"] == report["schedule"]["active"]  # as many passes as active steps
    assert unprofiled["ms_per_step"] > 0 and unprofiled["iqr_ms"] >= 0
    assert unprofiled["warmup_passes"] == report["schedule"]["wait"] + report["schedule"]["warmup"]
    assert report["distortion"] == pytest.approx(report["ms_per_step"] / unprofiled["ms_per_step"], abs=1e-4)
    estimates = [line["profiler_ms_estimate"] for line in report["lines"]]
    # a difference within the steps' own variation (both sides' middle halves overlap) is no cost to share out
    overlap = window_overlap([s["ms"] for s in report["steps"]], unprofiled)
    if overlap is None:
        assert all(e is not None and 0 <= e <= max(0.0, report["ms_per_step"] - unprofiled["ms_per_step"]) + 1e-6
                   for e in estimates)
    else:
        assert estimates and all(e is None for e in estimates)
    assert violations(report) == []  # one definition of ms/step in the distortion's words; estimates within lines
    text = run_stepscope("analyze", str(Path(report["traces"][0]).parent), cwd=workspace).stdout
    assert "without the profiler" in text and "distortion" in text
    with History.open(workspace) as h:
        row = h.get(Path(report["traces"][0]).parent.name)
    assert row["kind"] == "profile" and row["distortion"] == pytest.approx(report["distortion"])
    assert row["unprofiled_ms"] == pytest.approx(unprofiled["ms_per_step"])
    assert row["distortion_overlaps"] is (overlap is not None)


def test_a_loop_that_ends_with_the_window_has_no_unprofiled_figure_and_says_why(workspace: Path):
    write(workspace, "sleepy.py", SLEEPY)
    # wait 1 + warmup 2 + active 5 = 8 steps: nothing is left to time without the profiler
    r = run_stepscope("profile", "sleepy.py", "--json", "--", "--steps", "8", cwd=workspace)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["unprofiled"] is None and report["distortion"] is None
    notes = json.loads((Path(report["traces"][0]).parent / "scenario.json").read_text())["notes"]
    assert any("without the profiler" in n["detail"] for n in notes)


def test_runs_finishing_at_once_are_both_recorded(workspace: Path):
    write(workspace, "sleepy.py", SLEEPY)
    procs = [subprocess.Popen([sys.executable, "-m", "stepscope", *args], cwd=workspace, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for args in (["measure", "sleepy.py", "--passes", "5", "--json"],
                          ["measure", "sleepy.py", "--passes", "5", "--json"],
                          ["profile", "sleepy.py", "--json"])]
    docs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        docs.append(json.loads(out))
    with History.open(workspace) as h:
        kinds = sorted(r["kind"] for r in h.runs())
    assert kinds == ["measure", "measure", "profile"]


def _profile(workspace: Path, *args: str) -> dict:
    write(workspace, "fed.py", WORKER_FED)
    r = run_stepscope("profile", "fed.py", "--json", "--", *args, cwd=workspace)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_a_window_that_used_up_batches_prepared_ahead_says_so_with_the_batch_read_as_evidence(workspace: Path):
    # A one-off second in the first step lets the worker fill its 8 batches: the window's steps
    # (after 1 wait + 2 warm-up steps) find theirs ready, the steps after the window wait ~50 ms each.
    report = _profile(workspace, "--pause", "1.0")
    unprofiled = report["unprofiled"]
    assert report["distortion"] < 0.5, (report["ms_per_step"], unprofiled)
    # the steps after the window warm up past the batches the worker keeps ready, and say why
    assert unprofiled["warmup_passes"] == 9 and "keep 8 batches ready" in unprofiled["warmup_note"]
    assert unprofiled["batch_read_ms"] > report["evidence"]["batch_read"]["ms"]
    found = [f for f in report["findings"] if f["kind"] == "profiled-faster"]
    assert len(found) == 1, [f["kind"] for f in report["findings"]]
    f = found[0]
    assert f["figures"]["cause"] == "batches prepared ahead"
    assert "1 worker keeps up to 8 batches ready" in f["hypothesis"]
    advised = f["figures"]["advised_warmup"]
    assert advised >= 9 and f"--warmup {advised}" in f["next_check"] and "stepscope measure fed.py" in f["next_check"]

    # Profiled again with the warm-up the finding advises (from this run's own figures, as a user
    # would): no finding, and the window reads the ~50 ms/step the loop runs at.
    r = run_stepscope("profile", "fed.py", "--warmup", str(advised), "--json", "--", "--pause", "1.0", cwd=workspace)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert [f for f in report["findings"] if f["kind"] == "profiled-faster"] == []
    assert report["ms_per_step"] > 30.0 and report["distortion"] > 0.8
