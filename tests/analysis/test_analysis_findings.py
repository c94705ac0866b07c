"""The simple findings: GPU not observed, an unsteady window, a start-up cost — and none on a clean run."""

from __future__ import annotations

from pathlib import Path

from .kineto_synth import Synth, run_folder
from stepscope.analysis.findings import Thresholds, find
from stepscope.analysis.report import analyze

FIELDS = {"kind", "file", "line", "observation", "hypothesis", "next_check"}


def steady(n: int = 5, *, devices: list | None = None, gpu: bool = True) -> Synth:
    s = Synth(devices=devices) if devices is not None else Synth()
    for k in range(n):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.region("ss:f0:12:next", t + 10, 50)
        s.region("ss:f0:13", t + 100, 800)
        if gpu:
            s.launch(t + 200, t + 300, 500)
    return s


def kinds(report: dict) -> list[str]:
    return [f["kind"] for f in report["findings"]]


def test_a_clean_steady_gpu_run_has_no_finding(tmp_path: Path) -> None:
    scenario = {"startup": {"to_first_step_ms": 40.0, "first_steps_ms": [1.2, 1.1]}}
    report = analyze([run_folder(tmp_path, steady(), scenario=scenario) / "trace.json"])
    assert report["findings"] == []


def test_gpu_listed_but_no_gpu_events_is_a_finding_that_says_unknown_not_zero(tmp_path: Path) -> None:
    report = analyze([run_folder(tmp_path, steady(gpu=False)) / "trace.json"])
    (finding,) = [f for f in report["findings"] if f["kind"] == "gpu-not-observed"]
    assert FIELDS <= set(finding)  # the contract's fields; severity and figures come on top
    assert "NVIDIA H200" in finding["observation"] and "not zero" in finding["observation"]
    assert "supported_activities" in finding["next_check"]


def test_a_cpu_program_on_a_cpu_machine_is_not_told_its_gpu_is_missing(tmp_path: Path) -> None:
    report = analyze([run_folder(tmp_path, steady(devices=[], gpu=False)) / "trace.json"])
    assert "gpu-not-observed" not in kinds(report)


def test_fewer_than_three_steps_is_an_unsteady_window_on_the_loop_header(tmp_path: Path) -> None:
    report = analyze([run_folder(tmp_path, steady(2)) / "trace.json"])
    (finding,) = report["findings"]
    assert finding["kind"] == "unsteady-window"
    assert finding["file"] == str(tmp_path / "ws" / "train.py") and finding["line"] == 12
    assert "Only 2 active step(s)" in finding["observation"]


def test_step_times_that_drift_are_an_unsteady_window(tmp_path: Path) -> None:
    s = Synth(devices=[])
    t = 0
    for k, dur in enumerate([1000, 1000, 1000, 2500, 1000]):
        s.step(k + 1, t, dur)
        t += dur
    report = analyze([s.write(tmp_path / "t.json")])
    (finding,) = report["findings"]
    assert finding["kind"] == "unsteady-window" and "ProfilerStep#4" in finding["observation"]
    assert "1.00 to 2.50 ms" in finding["observation"]


def test_slow_first_steps_are_a_startup_cost_with_both_figures(tmp_path: Path) -> None:
    scenario = {"startup": {"to_first_step_ms": 2300.0, "first_steps_ms": [850.0, 3.0]}}
    report = analyze([run_folder(tmp_path, steady(), scenario=scenario) / "trace.json"])
    (finding,) = report["findings"]
    assert finding["kind"] == "startup-cost"
    assert "2300.0 ms" in finding["observation"] and "850.0" in finding["observation"]
    assert "1.00 ms/step" in finding["observation"]


def test_thresholds_are_configurable() -> None:
    report = {"steps": [{"name": "a", "ms": 1.0}, {"name": "b", "ms": 1.3}, {"name": "c", "ms": 1.0}],
              "ms_per_step": 1.0, "gpu": {"observed": True}, "regions": [], "machine": {}, "startup": {}}
    assert find(report) == []
    assert [f["kind"] for f in find(report, Thresholds(max_step_spread=0.2))] == ["unsteady-window"]
