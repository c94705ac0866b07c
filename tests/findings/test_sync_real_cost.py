"""`sync-in-step` says what the waits can cost in the real step, from figures the profiler does not
distort: the step timed without the profiler after the window (the run's `unprofiled`) against the
GPU's work in the window (the waits cannot save more than the GPU's idle time there, nor more than
the GPU's work plus the waits themselves). Its severity follows that, not the profiled share (synthetic GPU traces;
times in µs, 1000 µs steps).

Each step: a `.item()` at line 30 that waits 10 µs (1% of the profiled step: under the profiler the
device is done before the host asks) and `busy_us` of GPU work launched before it.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from stepscope.analysis.report import analyze
from tests.analysis.invariants import violations
from tests.analysis.kineto_synth import Synth, run_folder


def reading_back(busy_us: float) -> Synth:
    s = Synth()
    for k in range(5):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.region("ss:f0:29", t + 10, 100)
        s.launch(t + 20, t + 30, busy_us)
        s.region("ss:f0:30", t + 900, 40)
        s.op("aten::item", t + 902, 30)
        s.op("aten::_local_scalar_dense", t + 904, 26)
        # the read-back's copy runs once the kernel is done and the host has asked for it
        s.launch(t + 906, max(t + 30 + busy_us, t + 908), 1, kind="gpu_memcpy", name="Memcpy DtoH (Device -> Pageable)",
                 nbytes=4)
        s.sync(t + 918, 10)
    return s


def analyzed(tmp_path: Path, busy_us: float, unprofiled_ms: list[float] | None) -> dict:
    ws = tmp_path / "ws"
    scenario = {"step": {"file": str(ws / "train.py"), "line": 12, "function": None, "kind": "loop"},
                "program": {"cwd": str(ws), "entry": {"kind": "script", "path": str(ws / "train.py")}}}
    run = run_folder(tmp_path, reading_back(busy_us), scenario=scenario)
    if unprofiled_ms is not None:
        (run / "timings.json").write_bytes(orjson.dumps({"warmup_ms": [], "raw_ms": unprofiled_ms, "clock": "host"}))
    report = analyze([run / "trace.json"])
    assert violations(report) == []
    (f,) = [f for f in report["findings"] if f["kind"] == "sync-in-step"]
    return f


def test_a_wait_that_looks_short_is_a_warning_where_the_gpu_idles_in_the_real_step(tmp_path: Path) -> None:
    # without the profiler: 0.8 ms a step, the GPU's work 0.501 ms of it (the kernel and the read-back's
    # copy): up to 0.299 ms (37%) to gain
    f = analyzed(tmp_path, 500, [0.8] * 5)
    assert f["severity"] == "warning" and f["line"] == 30
    assert f["figures"]["sync_ms"] < 0.05 * f["figures"]["step_ms"]  # what the profiled window shows
    assert f["figures"]["real_step_ms"] == 0.8 and f["figures"]["real_gpu_busy_ms"] == 0.501
    assert f["figures"]["most_saved_share"] == pytest.approx(0.299 / 0.8, abs=1e-4)
    assert "the GPU is idle 0.30 ms of the real step (37%)" in f["observation"]
    assert "removing the waits can save up to that idle time, 37% of the real step" in f["observation"]
    # the step is timed without the profiler already: the check measures the change itself, once
    assert f["next_check"].startswith("Measure what the waits cost: move the read-back out of the step")
    assert f["next_check"].count("stepscope measure") == 1 and "`stepscope measure --against`" in f["next_check"]


def test_a_wait_in_a_step_whose_gpu_is_busy_without_the_profiler_stays_info(tmp_path: Path) -> None:
    # without the profiler: 0.52 ms a step, 0.5 ms of GPU work: the waits cannot cost more than 4%
    f = analyzed(tmp_path, 500, [0.52] * 5)
    assert f["severity"] == "info"
    assert "Removing the waits could save up to that idle time, 4% of the real step: that is the most" \
        in f["observation"]
    assert "can cost a real share" not in f["observation"]
    assert "the GPU is busy nearly all of the real step" in f["hypothesis"] and "they can cost little" in f["hypothesis"]


def test_a_wait_on_a_gpu_with_little_work_stays_info_however_idle_the_gpu_is(tmp_path: Path) -> None:
    # without the profiler: 1 ms a step, the GPU's work 0.021 ms of it: idle 98% of the real step, but a
    # wait lasts only while the GPU finishes its work: the waits (the sync and the read-back's blocking
    # copy, 0.02 ms as profiled) and that work can cost 0.041 ms, 4%
    f = analyzed(tmp_path, 20, [1.0] * 5)
    assert f["severity"] == "info"
    figures = f["figures"]
    assert figures["real_gpu_idle_ms"] == pytest.approx(0.979, abs=1e-4) and figures["sync_ms"] == pytest.approx(0.02)
    assert figures["most_saved_ms"] == pytest.approx(figures["real_gpu_busy_ms"] + figures["sync_ms"], abs=1e-4)
    assert figures["most_saved_share"] == pytest.approx(0.041, abs=1e-4)
    assert "the waits likely cost about their own time, 0.020 ms (2% of the real step)" in f["observation"]
    assert "would make them cost more, at most 0.04 ms (4% of the real step): a wait lasts while the GPU " \
        "finishes the work queued before it" in f["observation"]
    assert "the host's own work outlasts the GPU's in the real step" in f["hypothesis"]


def test_a_wait_in_a_step_whose_host_outlasts_the_gpu_is_info_though_its_bound_is_large(tmp_path: Path) -> None:
    # as an H100 showed (benchmarks/findings_gpu.py, sync_real: waits 1% of the step, the real cost none
    # by hand): without the profiler 1 ms a step, the GPU's work 0.301 ms of it. The bound is 0.32 ms
    # (32%), but the host's own work (at least 0.68 ms) outlasts the GPU's, so the GPU keeps up and the
    # waits find it nearly done
    f = analyzed(tmp_path, 300, [1.0] * 5)
    assert f["severity"] == "info"
    assert f["figures"]["most_saved_share"] == pytest.approx(0.321, abs=1e-3)  # still the bound
    assert "at least 0.68 ms of it, outlasts the GPU's 0.30 ms" in f["observation"]
    assert "the waits likely cost about their own time, 0.020 ms (2% of the real step)" in f["observation"]
    assert "Only GPU work launched in a burst just before a wait would make them cost more, at most 0.32 ms" \
        in f["observation"]
    assert "can cost a real share" not in f["observation"]


def test_without_the_real_step_the_profiled_share_decides_as_before(tmp_path: Path) -> None:
    f = analyzed(tmp_path, 500, None)
    assert f["severity"] == "info" and "real_step_ms" not in f["figures"]
    assert "without the profiler the same waits can cost a real share of the step" in f["observation"]
    assert f["next_check"].startswith("First time the step without the profiler")
