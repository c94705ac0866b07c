"""Input shapes and memory per line (`--shapes` / `--memory`), from a real torch CPU trace.

The program is recorded with `record_shapes=True, profile_memory=True` and Stepscope's own labels
(`ss:f0:<line>`), as the agent runs a loop: line 3 runs a Linear layer on an (8, 32) batch, line 4
allocates a 1024×1024 float tensor (4 MiB), line 5 only sleeps.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from stepscope.analysis.report import analyze

from .kineto_synth import Synth

TRAIN = """\
import torch, time
for x in batches:
    y = model(x)
    big = torch.zeros(1024, 1024)
    time.sleep(0.01)
"""

RUNNER = """\
import sys, time
import torch
from torch.profiler import profile, schedule, record_function, ProfilerActivity
torch.manual_seed(0); torch.set_num_threads(1)
model = torch.nn.Linear(32, 64)
keep = []
with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=2, repeat=1),
             record_shapes=True, profile_memory=True,
             on_trace_ready=lambda p: p.export_chrome_trace(sys.argv[1])) as prof:
    for _ in range(3):
        x = torch.randn(8, 32)
        with record_function("ss:f0:3"):
            y = model(x)
        with record_function("ss:f0:4"):
            big = torch.zeros(1024, 1024)
        with record_function("ss:f0:5"):
            time.sleep(0.01)
        keep.append(big)  # still allocated at the end of the step: allocations are not undone by frees
        prof.step()
"""


@pytest.fixture(scope="module")
def shapes_run(tmp_path_factory) -> tuple[Path, Path]:
    pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("shapes")
    ws = tmp / "ws"
    ws.mkdir()
    (ws / "train.py").write_text(TRAIN)
    runner = tmp / "runner.py"
    runner.write_text(RUNNER)
    run = tmp / "run"
    run.mkdir()
    proc = subprocess.run([sys.executable, str(runner), str(run / "trace.json")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (run / "files.json").write_text(json.dumps({"root": str(ws), "files": {"f0": "train.py"}}))
    return run, ws


@pytest.mark.torch
def test_each_line_lists_the_shapes_of_the_ops_it_called(shapes_run) -> None:
    run, _ = shapes_run
    report = analyze([run])
    by_line = {r["line"]: r for r in report["lines"]}
    linear = [s for s in by_line[3]["shapes"] if s["op"] == "aten::linear"]
    assert linear == [{"op": "aten::linear", "shapes": [[8, 32], [64, 32], [64]], "types": ["float", "float", "float"],
                       "calls": 1.0, "ms": linear[0]["ms"]}]
    # a size passed as a list is not a tensor input: torch records it with no dims
    assert [(s["op"], s["calls"]) for s in by_line[4]["shapes"]] == [("aten::zeros", 1.0)]
    assert by_line[5]["shapes"] == []  # sleeping calls no op


@pytest.mark.torch
def test_each_line_says_what_it_allocated_and_the_peak_while_it_ran(shapes_run) -> None:
    run, _ = shapes_run
    report = analyze([run])
    by_line = {r["line"]: r for r in report["lines"]}
    assert by_line[4]["alloc_bytes"] == 1024 * 1024 * 4
    assert by_line[5]["alloc_bytes"] == 0  # observed: nothing allocated while it slept
    assert by_line[4]["peak_bytes"] >= 1024 * 1024 * 4
    assert by_line[5]["peak_bytes"] >= by_line[4]["peak_bytes"]  # the 4 MiB tensor is kept alive
    assert all(r["memory_device"] == "host" for r in report["lines"])


def test_shapes_and_memory_not_recorded_are_null_not_zero(tmp_path: Path) -> None:
    s = Synth(devices=[])
    s.step(1, 0, 100)
    s.region("forward", 10, 50)
    s.op("aten::mm", 20, 10)
    report = analyze([s.write(tmp_path / "t.json")])
    assert report["regions"] and report["lines"] == []
    run = tmp_path / "run"
    run.mkdir()
    s2 = Synth(devices=[])
    s2.step(1, 0, 100)
    s2.region("ss:f0:3", 10, 50)
    s2.op("aten::mm", 20, 10)
    s2.write(run / "trace.json")
    (run / "files.json").write_text(json.dumps({"root": str(tmp_path), "files": {"f0": "train.py"}}))
    line = analyze([run])["lines"][0]
    assert line["shapes"] is None and line["alloc_bytes"] is None and line["peak_bytes"] is None
