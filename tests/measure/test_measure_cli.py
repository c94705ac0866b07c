"""`stepscope measure` end to end: real torch programs on the CPU, the real command."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from stepscope.history.store import History
from tests.conftest import run_stepscope

from .programs import LOADER, SLEEPY, loop_line, write

pytestmark = [pytest.mark.torch, pytest.mark.slow]


def measure(ws: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return run_stepscope("measure", *args, cwd=ws, timeout=timeout)


def test_measure_times_the_passes_apart_from_the_warm_up_and_records_the_run(workspace: Path):
    script = write(workspace, "sleepy.py", SLEEPY)
    r = measure(workspace, "sleepy.py", "--warmup", "3", "--passes", "12", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert len(doc["raw_ms"]) == 12 and len(doc["warmup_ms"]) == 3
    assert doc["min_ms"] >= 4.0  # the step's own sleep is inside what is timed
    assert doc["min_ms"] <= doc["p10_ms"] <= doc["median_ms"] <= doc["p90_ms"] <= doc["max_ms"]
    assert doc["iqr_ms"] >= 0 and isinstance(doc["noisy"], bool)
    assert doc["machine"]["device"] == "CPU only" and doc["machine"]["torch"]
    assert doc["clock"].startswith("host clock")
    scope = doc["scope"]
    assert scope["script"] == "sleepy.py" and scope["step"]["line"] == loop_line(script)
    assert scope["step"]["header"] == "for step in range(args.steps):" and scope["warmup"] == 3
    assert scope["device"] == "cpu" and scope["batch_size"] is None and doc["samples_per_s"] is None
    losses = doc["values"]
    assert len(losses) == 12 and losses[0] > losses[-1]  # the loss of every pass, and it trains
    run_dir = Path(doc["run_dir"])
    assert (run_dir / "measure.json").is_file() and (run_dir / "timings.json").is_file()
    with History.open(workspace) as h:
        row = h.get(run_dir.name)
    assert row["kind"] == "measure" and row["ms_per_step"] == doc["median_ms"] and row["passes"] == 12


def test_samples_per_second_where_the_batch_is_known(workspace: Path):
    write(workspace, "loader.py", LOADER)
    r = measure(workspace, "loader.py", "--warmup", "2", "--passes", "10", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["scope"]["batch_size"] == 16
    assert doc["samples_per_s"] == pytest.approx(16 * 1000 / doc["median_ms"])


def test_repeated_processes_report_run_to_run_beside_pass_to_pass(workspace: Path):
    write(workspace, "sleepy.py", SLEEPY)
    r = measure(workspace, "sleepy.py", "--warmup", "2", "--passes", "8", "--runs", "2", "--json", "--progress")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert len(doc["runs"]) == 2 and len(doc["raw_ms"]) == 16
    # --progress: a line as each pass of each process begins, counting up to a total known from the start
    progress = [line for line in r.stderr.splitlines() if line.startswith("stepscope: progress: ")]
    assert progress[0] == "stepscope: progress: 0/20 starting sleepy.py (imports, data, model)"
    assert progress[1] == "stepscope: progress: 1/20 process 1/2, pass 1/10 (warm-up)"
    assert progress[3] == "stepscope: progress: 3/20 process 1/2, pass 3/10 (timed)"
    assert progress[-1] == "stepscope: progress: 20/20 process 2/2, pass 10/10 (timed)" and len(progress) == 21
    assert doc["variation"]["run_to_run_pct"] is not None and doc["variation"]["pass_to_pass_pct"] >= 0
    assert doc["values_consistent"] is True  # same seeds, same data: the same losses in both processes
    text = measure(workspace, "sleepy.py", "--warmup", "2", "--passes", "8", "--runs", "2").stdout
    assert "run to run" in text and "pass to pass" in text and "without the profiler" in text
    # what the step computed, first to last, and that both processes computed the same
    assert re.search(r"^  value    loss \S+ → \S+ \(first → last of 8 passes\); the same in every process$", text, re.M)


def test_a_value_expression_is_evaluated_in_the_steps_frame(workspace: Path):
    write(workspace, "sleepy.py", SLEEPY)
    r = measure(workspace, "sleepy.py", "--warmup", "1", "--passes", "5", "--value", "loss * 2", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    plain = json.loads(measure(workspace, "sleepy.py", "--warmup", "1", "--passes", "5", "--json").stdout)
    assert doc["value"] == "loss * 2"
    assert doc["values"] == pytest.approx([2 * v for v in plain["values"]])


def test_a_value_the_frame_cannot_evaluate_is_a_one_line_error(workspace: Path):
    write(workspace, "sleepy.py", SLEEPY)
    r = measure(workspace, "sleepy.py", "--passes", "3", "--value", "accuracy")
    assert r.returncode == 2
    assert "--value 'accuracy'" in r.stderr.strip().splitlines()[-1]


def test_the_programs_failure_is_exit_3_with_its_own_traceback(workspace: Path):
    write(workspace, "crash.py", "import torch\nfor i in range(10):\n    x = torch.ones(2)\n"
                                 "    if i == 3:\n        raise RuntimeError('boom')\n")
    r = measure(workspace, "crash.py", "--line", "2", "--warmup", "1", "--passes", "5")
    assert r.returncode == 3
    assert 'crash.py", line 5' in r.stderr and "RuntimeError: boom" in r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("stepscope: ")


def test_no_step_loop_is_exit_6(workspace: Path):
    write(workspace, "flat.py", "import torch\nx = torch.ones(3)\n")
    r = measure(workspace, "flat.py")
    assert r.returncode == 6 and "stepscope:" in r.stderr


def test_a_loop_shorter_than_the_passes_reports_what_it_timed(workspace: Path):
    write(workspace, "sleepy.py", SLEEPY)
    r = measure(workspace, "sleepy.py", "--warmup", "2", "--passes", "20", "--json", "--", "--steps", "10")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert len(doc["raw_ms"]) == 8
    assert any("8 of the 20 passes" in n for n in doc["notes"])


def test_compare_with_an_earlier_run_gives_a_verdict(workspace: Path):
    write(workspace, "sleepy.py", SLEEPY)
    first = json.loads(measure(workspace, "sleepy.py", "--passes", "10", "--runs", "2", "--json").stdout)
    write(workspace, "sleepy.py", SLEEPY.replace("default=0.004", "default=0.03"))  # the change under test
    r = measure(workspace, "sleepy.py", "--passes", "10", "--runs", "2", "--compare", Path(first["run_dir"]).name,
                "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "slower" and doc["ratio"] > 3
    assert doc["baseline"]["run"] == Path(first["run_dir"]).name
    assert doc["values_match"] is True  # the sleep changed the time, not the results
    # the margin it was called against, wherever the verdict is said: JSON, the comparison, the list
    assert doc["verdict_detail"] == "slower" and doc["margin"] == 0.01
    for args in (["compare", Path(first["run_dir"]).name, Path(doc["run_dir"]).name], ["list"]):
        listed = run_stepscope("runs", *args, cwd=workspace)
        assert "slower (beyond the 1% margin)" in listed.stdout, listed.stdout


def test_compare_refuses_a_run_of_another_scope_unless_forced(workspace: Path):
    write(workspace, "sleepy.py", SLEEPY)
    first = json.loads(measure(workspace, "sleepy.py", "--passes", "5", "--json").stdout)
    name = Path(first["run_dir"]).name
    r = measure(workspace, "sleepy.py", "--passes", "5", "--warmup", "1", "--compare", name)
    assert r.returncode == 5
    assert "warm-up passes" in r.stderr and "--force" in r.stderr
    forced = measure(workspace, "sleepy.py", "--passes", "5", "--warmup", "1", "--compare", name, "--force", "--json")
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout)["differences"]


@pytest.mark.parametrize("flags, message", [
    (["--passes", "0"], "--passes"),
    (["--runs", "0"], "--runs"),
    (["--tolerance", "-1"], "--tolerance"),
    (["--compare", "x", "--against", "HEAD"], "not allowed with"),
    (["--line", "2", "--function", "f"], "not allowed with"),
])
def test_bad_flags_are_usage_errors(workspace: Path, flags, message):
    write(workspace, "sleepy.py", SLEEPY)
    r = measure(workspace, "sleepy.py", *flags)
    assert r.returncode == 2 and message in r.stderr


def test_a_step_method_of_another_module_is_measured_with_the_program_started_from_the_script(workspace: Path):
    (workspace / "trainer").mkdir()
    write(workspace, "trainer/__init__.py", "")
    write(workspace, "trainer/loop.py", '''import time

import torch


class Trainer:
    def __init__(self):
        self.model = torch.nn.Linear(8, 1)

    def step(self, x):
        time.sleep(0.003)
        return self.model(x).sum()
''')
    write(workspace, "main.py", '''import torch

from trainer.loop import Trainer

t = Trainer()
for _ in range(30):
    t.step(torch.randn(4, 8))
''')
    r = measure(workspace, "main.py", "--function", "trainer/loop.py:Trainer.step", "--warmup", "2", "--passes", "6",
                "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert len(doc["raw_ms"]) == 6 and doc["min_ms"] >= 3.0  # each call of the method, its sleep inside
    step = doc["scope"]["step"]
    assert step["function"] == "Trainer.step" and step["header"] is None


def test_a_function_steps_call_is_timed_apart_from_the_time_between_calls(workspace: Path):
    # A handler that works ~10 ms per call, called every ~40 ms: ms/step is the pace of the calls,
    # `call` the call itself, and each call ends inside its step.
    write(workspace, "serve.py", '''import time


def handle(request):
    time.sleep(0.010)
    return sum(request)


for i in range(30):
    time.sleep(0.030)  # waiting for the next request
    handle([float(i)] * 16)
''')
    r = measure(workspace, "serve.py", "--function", "handle", "--warmup", "2", "--passes", "10", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    call = doc["call"]
    assert doc["median_ms"] >= 38.0  # the wait between calls is in the step ...
    assert 10.0 <= call["median_ms"] <= doc["median_ms"] - 25.0  # ... and not in the call
    assert len(call["raw_ms"]) == 10 and 0.0 < call["share_of_step"] < 0.6
    assert all(c < s for c, s in zip(call["raw_ms"], doc["raw_ms"]))  # every call returned, inside its pass
    # each pass's value is what the call that began it returned: call i returns 16 * i (passes 2..11)
    assert doc["value"] == "return" and doc["values"] == [16.0 * i for i in range(2, 12)]
    text = measure(workspace, "serve.py", "--function", "handle", "--warmup", "2", "--passes", "5",
                   "--value", "return / len(request)").stdout
    assert re.search(r"^  call     [0-9.]+ ms per call, start to return .* of the time between call starts",
                     text, re.M), text
    # an expression in the function's frame as it returns: its arguments and what it returned
    assert "  value    return / len(request) 2 → 6 (first → last of 5 passes)" in text, text


def test_return_in_a_value_of_a_loop_step_is_a_usage_error(workspace: Path):
    write(workspace, "sleepy.py", SLEEPY)
    r = measure(workspace, "sleepy.py", "--value", "return")
    assert r.returncode == 2 and r.stderr.strip().splitlines()[-1] == (
        "stepscope: --value 'return': `return` is what a step function's call returned, and this step is a loop "
        "(name the function with --function)")
    r = measure(workspace, "sleepy.py", "--value", "return +")
    assert r.returncode == 2 and "is not a Python expression" in r.stderr


def test_a_warmup_shorter_than_the_batches_workers_keep_ready_is_said(workspace: Path):
    from .programs import WORKER_FED

    write(workspace, "fed.py", WORKER_FED)
    # one worker keeps 8 batches ready; a second's pause in the first step fills them
    r = run_stepscope("measure", "fed.py", "--warmup", "3", "--passes", "5", "--json", "--", "--pause", "1.0",
                      cwd=workspace)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert any("keep 8 batches ready" in n and "--warmup 9" in n for n in doc["notes"]), doc["notes"]
    assert doc["mean_ms"] == pytest.approx(sum(doc["raw_ms"]) / len(doc["raw_ms"]))
    # with the advised warm-up the passes are the loop's pace (~50 ms/step: the worker's batch) and no note
    r = run_stepscope("measure", "fed.py", "--warmup", "9", "--passes", "5", "--json", "--", "--pause", "1.0",
                      cwd=workspace)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert not any("batches ready" in n for n in doc["notes"]) and doc["median_ms"] > 30.0


def test_a_loss_that_is_not_a_number_is_measured_and_reads_as_no_value(workspace: Path):
    write(workspace, "nan.py", "import torch\nfor step in range(30):\n"
                               "    loss = torch.tensor(float('nan')) if step % 2 else torch.tensor(float('inf'))\n")
    r = run_stepscope("measure", "nan.py", "--line", "2", "--warmup", "2", "--passes", "5", "--json", cwd=workspace)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert len(doc["raw_ms"]) == 5 and doc["values"] is None
