"""ms/step is elapsed time: a step completes when its CPU span and its GPU work have ended."""

from __future__ import annotations

from pathlib import Path

import pytest

from .kineto_synth import Synth, run_folder
from stepscope.analysis.report import analyze
from stepscope.errors import NotATraceError


def gpu_behind_cpu() -> Synth:
    """Three 1 ms CPU spans; steps 1 and 2 each launch a 20 ms kernel that runs long after the span."""
    s = Synth()
    s.step(1, 0, 1000)
    s.launch(200, 300, 20000)  # runs 300 .. 20300
    s.step(2, 1000, 1000)
    s.launch(1100, 20300, 20000)  # queued behind the first: 20300 .. 40300
    s.step(3, 2000, 1000)
    s.launch(2100, 40300, 100)  # 40300 .. 40400
    return s


def test_a_step_whose_gpu_work_runs_behind_its_cpu_span_counts_the_gpu_work(tmp_path: Path) -> None:
    report = analyze([gpu_behind_cpu().write(tmp_path / "t.json")])
    # completions 20300, 40300, 40400 µs -> durations 20.3, 20.0, 0.1 ms (not the 1 ms CPU spans)
    assert [s["ms"] for s in report["steps"]] == [20.3, 20.0, 0.1]
    assert [s["name"] for s in report["steps"]] == ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"]
    assert report["ms_per_step"] == 20.0
    assert all(s["cpu_ms"] == 1.0 for s in report["steps"])


def test_cpu_only_steps_are_their_spans_and_gaps_between_steps_count(tmp_path: Path) -> None:
    s = Synth(devices=[])
    s.step(5, 0, 3000)
    s.step(6, 3500, 2000)  # 0.5 ms between steps belongs to step 6 (previous completion -> own)
    s.step(7, 5500, 4000)
    report = analyze([s.write(tmp_path / "t.json")])
    assert [x["ms"] for x in report["steps"]] == [3.0, 2.5, 4.0]
    assert report["ms_per_step"] == 3.0
    assert report["gpu"]["observed"] is False


def test_gpu_work_queued_before_the_window_lands_in_the_first_step_not_startup(tmp_path: Path) -> None:
    s = Synth()
    s.step(3, 1000, 500)
    # a kernel launched before the window (its launch call is not in the trace) runs until 4000
    s.launch(0, 1100, 2900, linked=False)
    s.step(4, 1500, 500)
    s.launch(1600, 4000, 1000)  # 4000 .. 5000
    report = analyze([s.write(tmp_path / "t.json")])
    assert [x["ms"] for x in report["steps"]] == [3.0, 1.0]
    assert report["startup"] == {"to_first_step_ms": None, "first_steps_ms": []}
    assert report["attribution"]["gpu_unlinked"] == report["attribution"]["gpu_launched_before"] == 1
    # and the report says what it is: work queued before the window, not a kernel that lost its launch
    assert any(n.startswith("1 of 2 GPU events were launched before the trace's first launch call") and
               "on no line" in n for n in report["notes"]), report["notes"]
    assert not any("have no launch call" in n for n in report["notes"])


def test_scenario_gives_startup_schedule_batch_and_machine(tmp_path: Path) -> None:
    scenario = {
        "machine": {"host": "box", "device": "NVIDIA H200", "devices": ["NVIDIA H200"], "torch": "2.11.0"},
        "schedule": {"wait": 1, "warmup": 2, "active": 3, "repeat": 1},
        "startup": {"to_first_step_ms": 812.5, "first_steps_ms": [300.0, 25.0]},
        "batch_size": 64,
    }
    run = run_folder(tmp_path, gpu_behind_cpu(), scenario=scenario)
    report = analyze([run / "trace.json"])
    assert report["scenario"] == scenario
    assert report["schedule"] == scenario["schedule"]
    assert report["startup"] == scenario["startup"]
    assert report["machine"]["source"] == "scenario"
    assert report["machine"]["device"] == "NVIDIA H200"
    assert report["samples_per_s"] == pytest.approx(64 / 0.020, rel=1e-6)


def test_machine_comes_from_the_trace_when_there_is_no_scenario(tmp_path: Path) -> None:
    s = gpu_behind_cpu()
    s.metadata = {"distributedInfo": {"rank": 3, "world_size": 8}, "cuda_runtime_version": 12090}
    report = analyze([s.write(tmp_path / "t.json")])
    assert report["machine"]["source"] == "trace"
    assert report["machine"]["device"] == "NVIDIA H200"
    assert report["machine"]["rank"] == 3
    assert report["machine"]["cuda_runtime_version"] == 12090


def test_a_trace_without_steps_is_one_window_with_no_ms_per_step(tmp_path: Path) -> None:
    # main thread: "forward" 0-100 µs, then "loss" 150-200 µs; a kernel launched at 50 runs 60-300 µs
    s = Synth()
    s.region("forward", 0, 100)
    s.region("loss", 150, 50)
    s.launch(50, 60, 240)
    report = analyze([s.write(tmp_path / "t.json")])
    assert report["steps"] == [] and report["ms_per_step"] is None and report["samples_per_s"] is None
    # the window runs from the main thread's first event to the end of the GPU work launched in it
    assert report["window"]["ms"] == 0.3 and report["window"]["per"] == "window" and report["window"]["steps"] == 0
    regions = {r["label"]: r for r in report["regions"]}
    assert regions["forward"]["wall_ms"] == 0.1 and regions["forward"]["gpu_ms"] == 0.24
    assert regions["loss"]["wall_ms"] == 0.05 and regions["loss"]["gpu_ms"] == 0.0
    assert any("no ProfilerStep#N" in n and "per window, not per step" in n for n in report["notes"])
    assert not any(f["kind"] == "unsteady-window" for f in report["findings"])


def test_a_trace_without_steps_that_spans_no_time_is_refused(tmp_path: Path) -> None:
    s = Synth(devices=[])
    s.op("aten::mm", 10, 0)
    with pytest.raises(NotATraceError, match="spans no time"):
        analyze([s.write(tmp_path / "t.json")])


def test_per_rank_folder_reports_the_lowest_rank_and_lists_every_rank(tmp_path: Path) -> None:
    folder = tmp_path / "ranks"
    for rank, step_us in ((1, 2000), (0, 1000)):
        s = Synth(devices=[])
        s.metadata = {"distributedInfo": {"rank": rank, "world_size": 2}}
        s.step(1, 0, step_us)
        s.step(2, step_us, step_us)
        s.write(folder / f"rank{rank}.json")
    report = analyze([folder])
    assert report["machine"]["rank"] == 0
    assert report["ms_per_step"] == 1.0
    assert sorted((r["rank"], r["ms_per_step"]) for r in report["ranks"]) == [(0, 1.0), (1, 2.0)]
    assert len(report["traces"]) == 2 and all(Path(t).is_absolute() for t in report["traces"])


def test_a_folder_with_other_json_beside_a_trace_notes_what_was_left_out(tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    s = Synth(devices=[])
    s.step(1, 0, 1000)
    s.step(2, 1000, 1000)
    s.step(3, 2000, 1000)
    s.write(folder / "rank0.json")
    (folder / "et.json").write_text('{"schema": "1.0.1", "nodes": []}')
    report = analyze([folder])
    assert report["traces"] == [str(folder / "rank0.json")]
    assert any(n.startswith("left out:") and "et.json" in n for n in report["notes"])


def test_a_named_file_that_is_not_a_trace_is_an_error_even_beside_traces(tmp_path: Path) -> None:
    (tmp_path / "et.json").write_text('{"schema": "1.0.1", "nodes": []}')
    with pytest.raises(NotATraceError, match="not a profiler trace"):
        analyze([tmp_path / "et.json"])


def test_a_run_folder_reads_only_its_trace(tmp_path: Path) -> None:
    run = run_folder(tmp_path, gpu_behind_cpu())
    (run / "events.json").write_text("[1, 2]")  # another record a run folder may hold
    report = analyze([run])
    assert report["traces"] == [str(run / "trace.json")]
    assert not any("left out" in n for n in report["notes"])


def test_a_step_never_completes_before_the_step_before_it(tmp_path: Path) -> None:
    # step 1's kernel runs long on stream 7; step 2's, on stream 8, ends long before it
    s = Synth()
    s.step(1, 0, 100)
    s.launch(10, 150, 4850, stream=7)  # 150 .. 5000
    s.step(2, 100, 100)
    s.launch(110, 200, 100, stream=8)  # 200 .. 300
    s.step(3, 200, 100)
    s.launch(210, 5000, 100, stream=7)  # 5000 .. 5100
    report = analyze([s.write(tmp_path / "t.json")])
    # completions 5000, 5000 (not 300: a step completes after the one before it), 5100
    assert [x["ms"] for x in report["steps"]] == [5.0, 0.0, 0.1]
    assert report["ms_per_step"] == 0.1
    assert sum(x["ms"] for x in report["steps"]) == pytest.approx(5.1)  # the steps tile the window
    # a real iteration, done in the shadow of the one before: a step of 0 ms, said
    assert ("1 step(s) completed no later than the step before them (everything they ran had ended by then) "
            "and count as 0 ms: ProfilerStep#2") in report["notes"]


def test_gpu_work_launched_between_two_steps_belongs_to_neither(tmp_path: Path) -> None:
    s = Synth()
    s.step(1, 0, 1000)
    s.launch(100, 200, 500)  # 200 .. 700
    s.launch(1500, 1600, 7400, stream=9)  # launched after step 1's span, before step 2's: 1600 .. 9000
    s.step(2, 2000, 1000)
    s.launch(2100, 2200, 500)  # 2200 .. 2700
    report = analyze([s.write(tmp_path / "t.json")])
    # step 1 completes with its span (1000), step 2 with its own (3000), from step 1's completion
    assert [x["ms"] for x in report["steps"]] == [1.0, 2.0]
    assert report["ms_per_step"] == 1.5


def test_a_launch_at_the_very_end_of_a_steps_span_is_that_steps_work(tmp_path: Path) -> None:
    s = Synth()
    s.step(1, 0, 1000)
    s.launch(1000, 1100, 3900)  # launched as step 1's span ends: runs 1100 .. 5000
    s.step(2, 1500, 1000)
    report = analyze([s.write(tmp_path / "t.json")])
    assert [x["ms"] for x in report["steps"]] == [5.0, 0.0]


def test_work_outside_every_step_leaves_the_later_work_of_the_steps_counted(tmp_path: Path) -> None:
    s = Synth()
    s.launch(-500, 0, 100)  # launched before the window (a linked launch): no step's work
    s.launch(0, -200, 100, linked=False, stream=9)  # unlinked, before the first step starts: no step's
    s.step(1, 0, 1000)
    s.launch(100, 200, 2800)  # step 1's: 200 .. 3000
    s.step(2, 1000, 1000)
    s.launch(2500, 2600, 10, linked=False, stream=8)  # unlinked, after the last span: not in the window
    s.launch(1100, 3000, 2000)  # step 2's, queued behind step 1's: 3000 .. 5000
    report = analyze([s.write(tmp_path / "t.json")])
    assert [x["ms"] for x in report["steps"]] == [3.0, 2.0]


def test_unlinked_gpu_work_belongs_to_the_step_whose_span_up_to_the_next_step_holds_its_start(tmp_path: Path) -> None:
    s = Synth()
    s.step(1, 0, 1000)
    s.launch(0, 1500, 1500, linked=False)  # starts between the steps: step 1's, runs to 3000
    s.step(2, 2000, 1000)
    s.launch(0, 3000, 400, linked=False, stream=8)  # starts exactly as the last step's span ends: its
    s.launch(0, 3001, 5000, linked=False, stream=9)  # starts after the last step's span: not in the window
    report = analyze([s.write(tmp_path / "t.json")])
    assert [x["ms"] for x in report["steps"]] == [3.0, 0.4]


def test_a_trace_without_steps_counts_the_gpu_work_launched_inside_its_window(tmp_path: Path) -> None:
    s = Synth()
    s.region("forward", 0, 100)
    s.region("loss", 150, 50)
    s.launch(150, 400, 100)  # launched inside the main thread's span [0, 200], runs 400 .. 500
    s.launch(200, 500, 100)  # launched exactly at its end, runs 500 .. 600
    s.launch(0, 900, 100, linked=False, stream=9)  # starts after the span, launched by no one here
    report = analyze([s.write(tmp_path / "t.json")])
    assert report["window"]["ms"] == 0.6
    (note,) = [n for n in report["notes"] if "no ProfilerStep#N" in n]
    assert "one window of 0.600 ms" in note  # the note and the figure agree


def test_a_trace_without_steps_names_the_iteration_labels_its_main_thread_repeats(tmp_path: Path) -> None:
    s = Synth(devices=[])
    for k in range(3):
        s.region("Optimizer.step#SGD.step", k * 100, 50)
        s.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", k * 100 + 60, 10)
    s.region("Optimizer.step#SGD.step", 10, 20, tid=7)  # another thread's: not counted
    s.region("## forward ##", 400, 10)  # once: not a repetition
    report = analyze([s.write(tmp_path / "t.json")])
    (note,) = [n for n in report["notes"] if "no ProfilerStep#N" in n]
    assert ("(3 x Optimizer.step#SGD.step, 3 x enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__)"
            in note), note


@pytest.mark.parametrize("at, window_ms", [("start", 0.7), ("end", 0.8)])
def test_a_trace_without_steps_counts_gpu_work_starting_on_its_bounds(tmp_path: Path, at: str,
                                                                       window_ms: float) -> None:
    s = Synth()
    s.region("forward", 0, 100)
    s.region("loss", 150, 50)  # the main thread's span: 0 .. 200
    if at == "start":
        s.launch(0, 0, 700, linked=False)  # starts with the span, runs to 700
    else:
        s.launch(0, 200, 600, linked=False)  # starts as the span ends, runs to 800
    report = analyze([s.write(tmp_path / "t.json")])
    assert report["window"]["ms"] == window_ms
