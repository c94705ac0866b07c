"""Real torch on the CPU: a labelled training loop, captured on a schedule, analysed end to end.

`TRAIN` and `NET` are the user's files. `RUNNER` is that program as Stepscope's agent runs it:
each statement of the loop body wrapped in `record_function("ss:<file-id>:<line>")` with the line
of the statement in the user's file, the loop header's batch fetch in `ss:f0:<line>:next`, the
helper's statement labelled inside its caller's region, and a scheduled profiler.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stepscope.analysis.render import render_text
from stepscope.analysis.report import analyze

pytestmark = pytest.mark.torch

NET = """\
def forward(model, x):
    return model(x)
"""

TRAIN = """\
import time
import torch
from model.net import forward
torch.manual_seed(0); torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
batches = [torch.randn(8, 32) for _ in range(5)]
for x in batches:
    y = forward(model, x)
    loss = y.pow(2).mean()
    loss.backward()
    time.sleep(0.2)
    opt.step(); opt.zero_grad()
"""

RUNNER = """\
import sys, time
import torch
from torch.profiler import profile, schedule, record_function, ProfilerActivity
torch.manual_seed(0); torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
batches = iter([torch.randn(8, 32) for _ in range(5)])
def forward(model, x):
    with record_function("ss:f1:2"):
        return model(x)
out = sys.argv[1]
sched = schedule(wait=1, warmup=1, active=3, repeat=1)
with profile(activities=[ProfilerActivity.CPU], schedule=sched,
             on_trace_ready=lambda p: p.export_chrome_trace(out)) as prof:
    while True:
        prof.step()
        with record_function("ss:f0:8:next"):
            x = next(batches, None)
        if x is None:
            break
        with record_function("ss:f0:9"):
            y = forward(model, x)
        with record_function("ss:f0:10"):
            loss = y.pow(2).mean()
        with record_function("ss:f0:11"):
            loss.backward()
        with record_function("ss:f0:12"):
            time.sleep(0.2)
        with record_function("ss:f0:13"):
            opt.step(); opt.zero_grad()
"""


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("cpu run")  # a space in the path, on purpose
    ws = tmp / "wörkspace"
    (ws / "model").mkdir(parents=True)
    (ws / "train.py").write_text(TRAIN)
    (ws / "model" / "net.py").write_text(NET)
    runner = tmp / "runner.py"
    runner.write_text(RUNNER)
    run = tmp / "run"
    run.mkdir()
    proc = subprocess.run([sys.executable, str(runner), str(run / "trace.json")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (run / "files.json").write_text(json.dumps({"root": str(ws), "files": {"f0": "train.py", "f1": "model/net.py"}}))
    (run / "scenario.json").write_text(json.dumps({"batch_size": 8, "schedule": {"wait": 1, "warmup": 1, "active": 3, "repeat": 1}}))
    return run, ws


def test_the_active_steps_and_the_exact_lines_are_found(cpu_run) -> None:
    run, ws = cpu_run
    report = analyze([run])
    assert len(report["steps"]) == 3
    assert report["gpu"]["observed"] is False
    lines = {(r["file"], r["line"]): r for r in report["lines"]}
    train, net = str(ws / "train.py"), str(ws / "model" / "net.py")
    assert set(lines) == {(train, 8), (train, 9), (train, 10), (train, 11), (train, 12), (train, 13), (net, 2)}
    assert all(r["precision"] == "exact" and r["gpu_ms"] is None for r in lines.values())
    # the planted 200 ms sleep is the heaviest line, and it is at least the time it slept
    assert report["lines"][0]["line"] == 12 and report["lines"][0]["wall_ms"] >= 200.0
    assert report["samples_per_s"] == pytest.approx(8 / report["ms_per_step"] * 1000, rel=1e-3)


def test_lines_never_add_up_to_more_than_the_step(cpu_run) -> None:
    run, ws = cpu_run
    report = analyze([run])
    top_level = [r for r in report["lines"] if r["file"] == str(ws / "train.py")]
    mean_step = sum(s["ms"] for s in report["steps"]) / len(report["steps"])
    assert sum(r["wall_ms"] for r in top_level) <= mean_step
    by_line = {(Path(r["file"]).name, r["line"]): r for r in report["lines"]}
    caller, helper = by_line[("train.py", 9)], by_line[("net.py", 2)]
    assert helper["wall_ms"] <= caller["wall_ms"]
    assert caller["cpu_self_ms"] == pytest.approx(caller["wall_ms"] - helper["wall_ms"], abs=1e-3)


def test_backward_of_the_forward_line_is_shown_as_backward(cpu_run) -> None:
    run, _ = cpu_run
    report = analyze([run])
    assert report["attribution"]["backward_link"] == "flows"
    by_line = {r["line"]: r for r in report["lines"]}
    assert by_line[9]["backward_ms"] > 0  # the model's layers ran forward in this line
    assert by_line[12]["backward_ms"] == 0.0


def test_gzipped_copy_gives_the_same_report(cpu_run, tmp_path: Path) -> None:
    run, _ = cpu_run
    gz_run = tmp_path / "gz run"
    gz_run.mkdir()
    for name in ("files.json", "scenario.json"):
        shutil.copy(run / name, gz_run / name)
    with open(run / "trace.json", "rb") as src, gzip.open(gz_run / "trace.json.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    plain, packed = analyze([run]), analyze([gz_run])
    assert packed["lines"] == plain["lines"] and packed["steps"] == plain["steps"]
    assert packed["traces"] == [str(gz_run / "trace.json.gz")]


def test_text_report_names_the_machine_and_the_heaviest_line(cpu_run) -> None:
    run, ws = cpu_run
    text = render_text(analyze([run]))
    first_lines = text.splitlines()
    assert "ms/step" in first_lines[0] and "median of 3 active steps" in first_lines[0]
    assert first_lines[1].startswith("measured on:")
    assert "GPU: not observed" in text
    table = text[text.index("per line"):]
    first_row = table.splitlines()[2]
    assert first_row.startswith("train.py:12 ")  # paths shown relative to the workspace root
