"""Edge cases of each finding on small synthetic traces whose figures can be checked by hand.

Times are microseconds; each step is 1000 µs unless said otherwise (tests/analysis/kineto_synth.py).
"""

from __future__ import annotations

from pathlib import Path

from stepscope.analysis.findings import Thresholds, find
from stepscope.analysis.report import analyze
from tests.analysis.kineto_synth import Synth, run_folder

from .conftest import kinds


def report_of(tmp_path: Path, s: Synth, **kw) -> dict:
    return analyze([run_folder(tmp_path, s, **kw) / "trace.json"])


def only(report: dict, kind: str) -> dict:
    (f,) = [f for f in report["findings"] if f["kind"] == kind]
    return f


# --- input-bound ---------------------------------------------------------------------------------

def reading(label: str, *, overlap: bool = False, devices: list | None = None, gpu: bool = True) -> Synth:
    s = Synth(devices=devices) if devices is not None else Synth()
    for k in range(5):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.region(label, t + 10, 400)
        s.region("ss:f0:13", t + 450, 500)
        if gpu:
            s.launch(t + 460, t + 470, 400)
            if overlap:  # the previous batch's work runs while this one is read
                s.launch(t + 20, t + 20, 390, stream=8)
    return s


def test_a_hand_written_batch_label_with_the_gpu_idle_is_input_bound(tmp_path: Path) -> None:
    f = only(report_of(tmp_path, reading("lecture_batch_cpu")), "input-bound")
    assert f["figures"]["read_ms"] == 0.4 and f["figures"]["gpu_idle_during_read_ms"] == 0.4
    assert "lecture_batch_cpu" in f["observation"] and "GPU is idle for 0.40 ms" in f["observation"]


def test_a_read_that_overlaps_gpu_work_is_not_input_bound(tmp_path: Path) -> None:
    report = report_of(tmp_path, reading("lecture_batch_cpu", overlap=True))
    assert "input-bound" not in kinds(report)
    assert report["evidence"]["batch_read"]["gpu_busy_ms"] == 0.39


def test_an_unknown_label_is_not_a_batch_read_until_configured(tmp_path: Path) -> None:
    s = reading("my_reader")
    assert "input-bound" not in kinds(report_of(tmp_path / "a", s))
    run = run_folder(tmp_path / "b", s)
    (tmp_path / "b" / "ws" / "pyproject.toml").write_text(
        '[tool.stepscope.findings]\nbatch-read-patterns = ["my_*"]\ninput-gpu-idle-share = 0.3\n')
    f = only(analyze([run / "trace.json"]), "input-bound")
    assert f["figures"]["signals"] == ["my_reader"]


def test_the_dataloader_frame_of_a_stack_trace_is_a_batch_read_on_a_cpu_run(tmp_path: Path) -> None:
    s = Synth(devices=[])
    for k in range(5):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.frame("/usr/lib/python3/site-packages/torch/utils/data/dataloader.py", 700, "__next__", t + 10, 700)
    f = only(analyze([s.write(tmp_path / "t.json")]), "input-bound")
    assert "takes 0.70 ms of the 1.00 ms mean step (70%" in f["observation"]
    assert "GPU" not in f["observation"]  # nothing suggested a GPU: nothing said about one


def test_a_read_under_the_cpu_share_is_not_input_bound(tmp_path: Path) -> None:
    s = Synth(devices=[])
    for k in range(5):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.region("ss:f0:12:next", t + 10, 400)  # 40%: under the 50% a CPU-only run needs
        s.region("ss:f0:13", t + 450, 500)
    report = report_of(tmp_path, s)
    assert report["evidence"]["batch_read"]["ms"] == 0.4 and "input-bound" not in kinds(report)
    assert kinds({"findings": find(report, Thresholds(input_cpu_share=0.3))}) == ["input-bound"]


# --- repeated-copy -------------------------------------------------------------------------------

def copying(*, factory: str | None = "aten::arange", factory_line: int = 20, steps_with_copy=range(5),
            in_read: bool = False) -> Synth:
    s = Synth()
    for k in range(5):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.region("ss:f0:12:next", t + 5, 300 if in_read else 20)
        if factory_line != 20 and factory:
            s.region(f"ss:f0:{factory_line}", t + 340, 40)
            s.op(factory, t + 345, 30)
        s.region("ss:f0:20", t + (100 if in_read else 400), 200)
        if factory and factory_line == 20:
            s.op(factory, t + 405, 30)
        if k in steps_with_copy:
            base = t + (110 if in_read else 450)
            s.op("aten::to", base, 100)
            s.op("aten::copy_", base + 10, 80)
            s.launch(base + 20, base + 40, 5, kind="gpu_memcpy", nbytes=1024)
        s.region("ss:f0:21", t + 620, 300)
        s.launch(t + 630, t + 640, 300)
    return s


def test_a_constant_built_and_copied_every_step_is_a_repeated_copy_on_its_line(tmp_path: Path) -> None:
    f = only(report_of(tmp_path, copying()), "repeated-copy")
    assert f["file"] == str(tmp_path / "ws" / "train.py") and f["line"] == 20
    # the copy's call (from pageable memory, as the synthetic trace names it) waits 10 µs each step
    assert f["figures"] == {"bytes": 1024, "per_step": 1, "steps": 5, "factory": "aten::arange", "host_wait_ms": 0.01}
    assert "1.0 KB" in f["observation"] and "same statement" in f["observation"]
    assert "The host waits on the device 0.010 ms per step on this line" in f["observation"]
    assert "verify the outputs" in f["next_check"]


def test_a_copy_no_factory_fed_is_data_not_a_repeated_copy(tmp_path: Path) -> None:
    report = report_of(tmp_path, copying(factory=None))
    assert "repeated-copy" not in kinds(report)
    assert report["evidence"]["h2d_copies"][0]["steps"] == 5  # the copy is there, every step


def test_a_factory_on_another_line_does_not_feed_the_copy(tmp_path: Path) -> None:
    assert "repeated-copy" not in kinds(report_of(tmp_path, copying(factory_line=19)))


def test_a_copy_missing_from_some_steps_is_not_repeated(tmp_path: Path) -> None:
    assert "repeated-copy" not in kinds(report_of(tmp_path, copying(steps_with_copy=(0, 2, 4))))


def test_a_copy_inside_the_batch_read_is_not_a_repeated_copy(tmp_path: Path) -> None:
    report = report_of(tmp_path, copying(in_read=True))
    assert "repeated-copy" not in kinds(report)
    assert report["evidence"]["h2d_copies"][0]["in_batch_read"] is True


# --- small-launches ------------------------------------------------------------------------------

def launching(kernel_us: float, *, long_kernel: bool = False) -> Synth:
    s = Synth()
    for k in range(5):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.region("ss:f0:30", t + 10, 950)
        for j in range(100):
            s.launch(t + 20 + 9 * j, t + 25 + 9 * j, kernel_us, stream=7 + (j % 2))
        if long_kernel:
            s.launch(t + 15, t + 20, 800, stream=9)
    return s


def test_many_short_kernels_with_an_idle_gpu_are_small_launches(tmp_path: Path) -> None:
    f = only(report_of(tmp_path, launching(3)), "small-launches")
    assert f["line"] == 30
    assert f["figures"]["kernels_per_step"] == 100 and f["figures"]["median_kernel_us"] == 3
    assert "100 kernels per step with a median of 3.0 µs" in f["observation"]


def test_many_short_kernels_beside_a_busy_gpu_are_not_small_launches(tmp_path: Path) -> None:
    report = report_of(tmp_path, launching(3, long_kernel=True))
    assert "small-launches" not in kinds(report)
    assert report["evidence"]["kernels"]["gpu_busy_ms"] > 0.5


def test_small_launches_need_gpu_events(tmp_path: Path) -> None:
    s = Synth(devices=[])
    for k in range(5):
        s.step(k + 1, k * 1000, 1000)
        for j in range(100):
            s.op("aten::add_", k * 1000 + 5 + 9 * j, 3)
    report = analyze([s.write(tmp_path / "t.json")])
    assert report["evidence"]["kernels"] is None and "small-launches" not in kinds(report)


# --- dominant-op ---------------------------------------------------------------------------------

def test_one_operator_holding_most_of_the_cpu_step_is_dominant_and_wrappers_are_not(tmp_path: Path) -> None:
    s = Synth(devices=[])
    for k in range(5):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.region("ss:f0:40", t + 10, 900)
        s.op("aten::linear", t + 20, 760)
        s.op("aten::addmm", t + 30, 740)
        s.op("aten::relu", t + 800, 50)
    f = only(analyze([run_folder(tmp_path, s) / "trace.json"]), "dominant-op")
    assert f["figures"]["op"] == "aten::addmm" and f["line"] == 40
    assert "0.74 ms of CPU self time" in f["observation"] and "74%" in f["observation"]


def test_an_operator_whose_kernels_fill_the_step_is_dominant_by_gpu_time(tmp_path: Path) -> None:
    s = Synth()
    for k in range(5):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.region("ss:f0:41", t + 10, 100)
        s.op("aten::mm", t + 20, 30)
        s.launch(t + 25, t + 40, 900)
    f = only(report_of(tmp_path, s), "dominant-op")
    assert f["figures"]["op"] == "aten::mm" and f["figures"]["gpu_ms"] == 0.9 and f["line"] == 41
    assert "0.90 ms of GPU work launched from it" in f["observation"]


def test_balanced_operators_are_not_dominant(tmp_path: Path) -> None:
    s = Synth(devices=[])
    for k in range(5):
        t = k * 1000
        s.step(k + 1, t, 1000)
        for j, name in enumerate(("aten::mm", "aten::add", "aten::tanh", "aten::sum")):
            s.op(name, t + 10 + 240 * j, 230)
    assert "dominant-op" not in kinds(analyze([s.write(tmp_path / "t.json")]))


# --- sync-in-step --------------------------------------------------------------------------------

def syncing(steps_with_sync=range(5)) -> Synth:
    s = Synth()
    for k in range(5):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.region("ss:f0:14", t + 10, 100)
        s.launch(t + 20, t + 100, 500)
        if k in steps_with_sync:
            s.region("ss:f0:15", t + 140, 470)
            s.sync(t + 150, 450)
        s.region("ss:f0:16", t + 700, 100)
        s.launch(t + 710, t + 720, 100)
    return s


def test_a_host_wait_every_step_is_sync_in_step_with_the_idle_gpu_that_follows(tmp_path: Path) -> None:
    f = only(report_of(tmp_path, syncing()), "sync-in-step")
    assert f["line"] == 15
    assert f["figures"]["sync_ms"] == 0.45 and f["figures"]["steps"] == 5
    assert f["figures"]["gpu_idle_after_ms"] == 0.12  # sync ends at 600, next kernel starts at 720
    assert "cudaStreamSynchronize" in f["observation"]


def test_a_single_wait_in_the_window_is_not_sync_in_step(tmp_path: Path) -> None:
    assert "sync-in-step" not in kinds(report_of(tmp_path, syncing(steps_with_sync=(2,))))


# --- unsteady-window and startup-cost ------------------------------------------------------------

def timed(durations: list[float]) -> Synth:
    s = Synth(devices=[])
    t = 0.0
    for k, d in enumerate(durations):
        s.step(k + 1, t, d)
        t += d
    return s


def test_a_slow_first_active_step_alone_does_not_make_the_window_unsteady(tmp_path: Path) -> None:
    report = analyze([timed([3000, 1000, 1000, 1010, 990]).write(tmp_path / "t.json")])
    assert report["findings"] == []


def test_sub_quarter_millisecond_jitter_is_not_an_unsteady_window(tmp_path: Path) -> None:
    report = analyze([timed([100, 100, 160, 100, 100]).write(tmp_path / "t.json")])
    assert report["findings"] == []
    assert kinds({"findings": find(report, Thresholds(unsteady_min_range_ms=0.01))}) == ["unsteady-window"]


def test_the_step_where_the_profiler_prepares_its_trace_is_not_start_up(tmp_path: Path) -> None:
    schedule = {"wait": 1, "warmup": 2, "active": 5, "repeat": 1}
    quiet = {"schedule": schedule, "startup": {"to_first_step_ms": 900.0, "first_steps_ms": [2.0, 1100.0, 1.5]}}
    assert report_of(tmp_path / "a", timed([1000] * 5), scenario=quiet)["findings"] == []
    slow = {"schedule": schedule, "startup": {"to_first_step_ms": 900.0, "first_steps_ms": [400.0, 1100.0, 1.5]}}
    f = only(report_of(tmp_path / "b", timed([1000] * 5), scenario=slow), "startup-cost")
    assert "400.0" in f["observation"] and "Step 2 (1100.0 ms) is left out" in f["observation"]
    assert "step 1, at 400.0 ms, is 400.0x the active window's 1.00 ms/step" in f["observation"]
    # a first step that is slow only because a periodic action is due at step 0 fits the hypothesis too
    assert "`if step % N == 0`" in f["hypothesis"]


def test_first_steps_within_the_windows_own_range_are_not_start_up(tmp_path: Path) -> None:
    scenario = {"startup": {"to_first_step_ms": 50.0, "first_steps_ms": [60.0]}}
    # a window whose slow steps take 40 ms: a 60 ms first step does not stand out of it
    assert "startup-cost" not in kinds(report_of(tmp_path, timed([1000, 40000, 1000, 40000, 1000]), scenario=scenario))


# --- robustness ----------------------------------------------------------------------------------

def test_find_on_a_report_without_evidence_or_figures_returns_what_it_can() -> None:
    assert find({}) == []
    bare = {"steps": [{"name": "a", "ms": 1.0}], "ms_per_step": 1.0, "gpu": {"observed": False, "reason": "x"},
            "machine": {"devices": ["NVIDIA H200"]}}
    assert kinds({"findings": find(bare)}) == ["gpu-not-observed", "unsteady-window"]


# --- host waits in copies, and a window without step markers ------------------------------------

def _blocking_copy(s: Synth, at: float, host_us: float, *, name: str = "Memcpy DtoH (Device -> Pageable)") -> None:
    """A cudaMemcpyAsync call that holds the host `host_us` until its copy (queued behind the device's
    work) has run."""
    s.launch(at, at + host_us - 20, 10, kind="gpu_memcpy", name=name, nbytes=4)
    runtime = next(e for e in reversed(s.events) if e["cat"] == "cuda_runtime")
    runtime["dur"] = host_us


def test_a_value_read_back_every_step_is_a_host_wait_never_a_dominant_copy(tmp_path: Path) -> None:
    # `.item()` under which the host waits 0.6 ms of each 1 ms step for the device-to-host copy
    s = Synth()
    for k in range(5):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.region("ss:f0:30", t + 10, 200)
        s.op("aten::mm", t + 20, 40)
        s.launch(t + 30, t + 40, 200)  # the work the read-back waits for: not enough to dominate
        s.region("ss:f0:31", t + 250, 700)
        s.op("aten::item", t + 255, 690)
        s.op("aten::_local_scalar_dense", t + 260, 680)
        s.op("aten::copy_", t + 265, 670)
        _blocking_copy(s, t + 270, 650)
    report = report_of(tmp_path, s)
    f = only(report, "sync-in-step")
    assert f["line"] == 31 and f["figures"]["kinds"] == {"read": 1.0}
    assert "cudaMemcpyAsync (device-to-host copy)" in f["observation"]
    # the copy and the read-back hold most of the host's time, yet neither is an operator to re-implement
    assert "dominant-op" not in kinds(report)
    assert not any("aten::copy_" in g["observation"] or "_local_scalar_dense" in g["observation"]
                   for g in report["findings"])


def test_a_window_without_step_markers_gets_the_findings_that_need_no_steps_said_per_window(tmp_path: Path) -> None:
    # no ProfilerStep: a DataLoader read holds half the window with the GPU idle, then the host blocks
    # in a read-back; findings that compare steps cannot run, the others run on the window
    s = Synth()
    s.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 5_000)
    s.op("aten::mm", 5_100, 100)
    s.launch(5_150, 5_200, 3_000)
    _blocking_copy(s, 5_300, 3_900)
    report = analyze([s.write(tmp_path / "t.json")])
    assert report["ms_per_step"] is None and report["window"]["per"] == "window"
    read = only(report, "input-bound")
    assert "per window" in read["observation"] and read["figures"]["per"] == "window"
    wait = only(report, "sync-in-step")
    assert "in the window" in wait["observation"] and wait["figures"]["per"] == "window"
    assert {"repeated-copy", "small-launches", "unsteady-window"}.isdisjoint(kinds(report))
    assert "dominant-op" not in kinds(report)
