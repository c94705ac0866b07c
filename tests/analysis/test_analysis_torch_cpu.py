"""Real torch on the CPU: a labelled training loop, captured on a schedule, analysed end to end.

The program below is what Stepscope's agent produces at run time (each loop statement wrapped in
`record_function("ss:<file-id>:<line>")`, the batch fetch in `ss:<file-id>:<line>:next`, a helper's
statement labelled inside its caller's region), written out so the test owns every line number.
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

PROGRAM = '''\
import sys, time
import torch
from torch.profiler import profile, schedule, record_function, ProfilerActivity
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
batches = iter([torch.randn(8, 32) for _ in range(12)])
def forward(x):
    with record_function("ss:f1:9"):
        return model(x)
out = sys.argv[1]
sched = schedule(wait=1, warmup=1, active=3, repeat=1)
with profile(activities=[ProfilerActivity.CPU], schedule=sched,
             on_trace_ready=lambda p: p.export_chrome_trace(out)) as prof:
    for _ in range(5):
        prof.step()
        with record_function("ss:f0:15:next"):
            x = next(batches)
        with record_function("ss:f0:17"):
            y = forward(x)
        with record_function("ss:f0:19"):
            loss = y.pow(2).mean()
        with record_function("ss:f0:21"):
            loss.backward()
        with record_function("ss:f0:23"):
            time.sleep(0.05)
        with record_function("ss:f0:25"):
            opt.step(); opt.zero_grad()
'''


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("cpu run")  # a space in the path, on purpose
    ws = tmp / "wörkspace"
    ws.mkdir()
    (ws / "train.py").write_text(PROGRAM)
    (ws / "model").mkdir()
    (ws / "model" / "net.py").write_text(PROGRAM)  # f1: the helper's file (same text keeps lines valid)
    run = tmp / "run"
    run.mkdir()
    proc = subprocess.run([sys.executable, str(ws / "train.py"), str(run / "trace.json")],
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
    assert set(lines) == {(train, 15), (train, 17), (train, 19), (train, 21), (train, 23), (train, 25), (net, 9)}
    assert all(r["precision"] == "exact" and r["gpu_ms"] is None for r in lines.values())
    # the planted 50 ms sleep is the heaviest line, and it is at least the time it slept
    assert report["lines"][0]["line"] == 23 and report["lines"][0]["wall_ms"] >= 50.0
    assert report["samples_per_s"] == pytest.approx(8 / report["ms_per_step"] * 1000, rel=1e-3)


def test_lines_never_add_up_to_more_than_the_step(cpu_run) -> None:
    run, ws = cpu_run
    report = analyze([run])
    top_level = [r for r in report["lines"] if r["file"] == str(ws / "train.py")]
    mean_step = sum(s["ms"] for s in report["steps"]) / len(report["steps"])
    assert sum(r["wall_ms"] for r in top_level) <= mean_step
    by_line = {(Path(r["file"]).name, r["line"]): r for r in report["lines"]}
    caller, helper = by_line[("train.py", 17)], by_line[("net.py", 9)]
    assert helper["wall_ms"] <= caller["wall_ms"]
    assert caller["cpu_self_ms"] == pytest.approx(caller["wall_ms"] - helper["wall_ms"], abs=1e-3)


def test_backward_of_the_forward_line_is_shown_as_backward(cpu_run) -> None:
    run, _ = cpu_run
    report = analyze([run])
    assert report["attribution"]["backward_link"] == "flows"
    by_line = {r["line"]: r for r in report["lines"]}
    assert by_line[17]["backward_ms"] > 0  # the model's layers were created by the forward line
    assert by_line[23]["backward_ms"] == 0.0


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
    assert first_row.startswith("train.py:23 ")  # paths shown relative to the workspace root
