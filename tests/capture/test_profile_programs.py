"""`stepscope profile` on real programs (real torch on the CPU): the step is found, every line
is attributed where it runs, and the program behaves as under plain Python."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ..conftest import run_stepscope

pytestmark = pytest.mark.torch


def _write(ws: Path, name: str, body: str) -> Path:
    path = ws / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(body))
    return path


def _profile(ws: Path, *args: str) -> dict:
    r = run_stepscope("profile", "--json", *args, cwd=ws)
    assert r.returncode == 0, r.stderr
    # torch's own profiler start/stop lines are not the program's output: kept in its log only
    assert "profiler_start" not in r.stderr and "profiler_stop" not in r.stderr, r.stderr
    return json.loads(r.stdout)  # exactly one JSON document on stdout


def _lines(report: dict) -> dict[tuple[str, int], dict]:
    return {(Path(entry["file"]).name, entry["line"]): entry for entry in report["lines"]}


def test_the_example_shows_the_slow_batch_read_as_the_top_line(workspace: Path):
    source = (workspace / "train_cpu.py").read_bytes()
    report = _profile(workspace, "train_cpu.py")
    text = source.decode().splitlines()
    loop_line = next(i for i, line in enumerate(text, 1) if "for x, y in loader:" in line)
    item_line = next(i for i, line in enumerate(text, 1) if "running += loss.item()" in line)
    lines = _lines(report)
    top = max(report["lines"], key=lambda e: e["wall_ms"])
    assert (Path(top["file"]).name, top["line"]) == ("train_cpu.py", loop_line)
    assert ("train_cpu.py", item_line) in lines
    assert all(e["precision"] == "exact" for e in report["lines"])
    assert report["gpu"]["observed"] is False and all(e["gpu_ms"] is None for e in report["lines"])
    assert len(report["steps"]) == 5 and report["ms_per_step"] > 0
    assert report["samples_per_s"] == pytest.approx(64 / report["ms_per_step"] * 1e3, rel=1e-3)
    scenario = report["scenario"]
    assert scenario["machine"]["device"] == "CPU only"
    assert scenario["observed"]["data_source"]["kind"] == "DataLoader"
    assert scenario["observed"]["batch"]["tensors"][0]["shape"] == [64, 768]
    assert scenario["observed"]["models"][0]["training"] is True
    assert scenario["startup"]["to_first_step_ms"] > 0 and len(scenario["startup"]["first_steps_ms"]) == 3
    # The user's file is untouched and nothing is cached beside it; results live in .stepscope/.
    assert (workspace / "train_cpu.py").read_bytes() == source
    assert hashlib.sha1(source).hexdigest() == hashlib.sha1((workspace / "train_cpu.py").read_bytes()).hexdigest()
    assert not list(workspace.rglob("__pycache__"))
    assert (workspace / ".stepscope" / ".gitignore").read_text().strip().endswith("*")
    run_dir = Path(report["traces"][0]).parent
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "files.json", "program.log", "report.json", "scenario.json", "sources.json", "spec.json", "status.json",
        "timeline.json", "timings.json", "trace.json"]
    # the text of the file the run has figures on, as it ran (what a later comparison matches statements through)
    assert json.loads((run_dir / "sources.json").read_text())["files"] == {"train_cpu.py": source.decode()}


def test_lines_inside_a_model_in_another_file_are_exact(workspace: Path):
    _write(workspace, "pkg/__init__.py", "")
    _write(workspace, "pkg/net.py", """\
        import torch
        from torch import nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.Linear(64, 256)
                self.b = nn.Linear(256, 8)

            def forward(self, x):
                h = self.a(x)
                h = torch.tanh(h) @ torch.ones(256, 256)
                return self.b(h)
        """)
    _write(workspace, "train.py", """\
        import torch
        from pkg.net import Net

        model = Net()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for i in range(20):
            loss = model(torch.randn(32, 64)).sum()
            loss.backward()
            opt.step()
            opt.zero_grad()
        """)
    lines = _lines(_profile(workspace, "train.py"))
    assert {("net.py", 12), ("net.py", 13), ("net.py", 14)} <= set(lines)
    assert ("net.py", 11) not in lines  # the def line is not a statement
    assert lines[("train.py", 7)]["wall_ms"] >= lines[("net.py", 13)]["wall_ms"]
    assert lines[("net.py", 13)]["backward_ms"] > 0  # backward work lands on the forward line

    shallow = _lines(_profile(workspace, "train.py", "--depth", "0"))
    assert {name for name, _ in shallow} == {"train.py"}


def test_helpers_written_as_real_code_is_written_are_profiled_line_by_line(workspace: Path):
    # `global` and `nonlocal` in the step's helpers, branches in every kind of `else`, a deep
    # elif chain: code of this shape stopped `profile` before its first step.
    _write(workspace, "helper.py", """\
        import torch

        _CALLS = 0


        def scale():
            global _CALLS
            _CALLS += 1
            return 1.0


        def counter():
            seen = 0

            def bump():
                nonlocal seen
                seen += 1
                return seen
            return bump


        def mix(x, step):
            if step % 2 == 0:
                y = x * 2
            elif step % 3 == 0:
                y = x * 3
            else:
                y = torch.tanh(x) @ torch.ones(64, 64)
            try:
                z = y.sum()
            except RuntimeError:
                z = None
            else:
                z = z / y.numel()
            finally:
                y = y + 0
            return y, z
        """)
    _write(workspace, "train.py", """\
        import torch
        from helper import counter, mix, scale

        model = torch.nn.Linear(64, 64)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        bump = counter()
        for step in range(12):
            y, z = mix(model(torch.randn(32, 64)) * scale(), step)
            loss = y.square().mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            bump()
        print("steps", bump())
        """)
    report = _profile(workspace, "train.py")
    lines = _lines(report)
    # the helpers' own lines, those in the branches and in the try's else and finally included
    assert {("helper.py", 8), ("helper.py", 18), ("helper.py", 24), ("helper.py", 28), ("helper.py", 30),
            ("helper.py", 34), ("helper.py", 36)} <= set(lines)
    assert not report["notes"] or not any("ran without its lines" in note for note in report["notes"])
    assert (workspace / "helper.py").read_text().count("global _CALLS") == 1  # untouched on disk


def test_each_call_of_a_function_is_a_step(workspace: Path):
    _write(workspace, "serve.py", """\
        import torch

        model = torch.nn.Linear(16, 4).eval()


        def handle(request):
            x = torch.tensor(request, dtype=torch.float32)
            with torch.inference_mode():
                y = model(x)
            return y.argmax(-1).tolist()


        if __name__ == "__main__":
            for i in range(20):
                handle([[float(i)] * 16] * 8)
        """)
    report = _profile(workspace, "serve.py", "--function", "handle")
    assert len(report["steps"]) == 5
    assert {line for _, line in _lines(report)} >= {7, 8, 9, 10}
    assert report["scenario"]["observed"]["modes"]["grad_enabled"] is True
    r = run_stepscope("profile", "serve.py", "--function", "nope", cwd=workspace)
    assert r.returncode == 6 and "no function named 'nope'" in r.stderr


def test_a_function_steps_def_line_is_the_call_apart_from_the_time_between_calls(workspace: Path):
    # A handler that works ~10 ms per call, called every ~40 ms: the step runs call to call (~40 ms),
    # the def line holds the call alone (~10 ms), and the handler's statements fit inside it.
    _write(workspace, "serve.py", """\
        import time
        import torch


        def handle(request):
            x = torch.tensor(request, dtype=torch.float32)
            time.sleep(0.010)
            return (x * 2).sum().item()


        if __name__ == "__main__":
            for i in range(20):
                time.sleep(0.030)  # waiting for the next request
                handle([float(i)] * 16)
        """)
    report = _profile(workspace, "serve.py", "--function", "handle")
    by_line = {line["line"]: line for line in report["lines"] if line["file"].endswith("serve.py")}
    step_ms, call_ms = report["ms_per_step"], by_line[5]["wall_ms"]
    assert step_ms >= 38.0  # the wait between calls is in the step ...
    assert 10.0 <= call_ms <= step_ms - 25.0  # ... and not in the call
    assert by_line[7]["wall_ms"] <= call_ms and by_line[6]["wall_ms"] + by_line[7]["wall_ms"] <= call_ms + 0.5
    assert 13 not in by_line  # the caller's own lines are no line of the step


def test_program_started_from_another_file_and_as_a_module_with_arguments(workspace: Path):
    _write(workspace, "app/__init__.py", "")
    _write(workspace, "app/loop.py", """\
        import torch


        def train(steps):
            model = torch.nn.Linear(8, 8)
            for i in range(steps):
                model(torch.randn(4, 8)).sum().backward()
        """)
    _write(workspace, "app/__main__.py", """\
        import argparse
        from .loop import train

        parser = argparse.ArgumentParser()
        parser.add_argument("--steps", type=int, required=True)
        train(parser.parse_args().steps)
        """)
    _write(workspace, "run.py", """\
        import sys
        from app.loop import train
        train(int(sys.argv[1]))
        """)
    as_module = _profile(workspace, "app/loop.py", "-m", "app", "--", "--steps", "12")
    assert ("loop.py", 7) in _lines(as_module)
    from_entry = _profile(workspace, "app/loop.py", "--entry", "run.py", "--", "12")
    assert ("loop.py", 7) in _lines(from_entry)


def test_while_loop_and_own_profiler_are_handled(workspace: Path):
    _write(workspace, "own.py", """\
        import torch
        from torch.profiler import profile, schedule

        model = torch.nn.Linear(8, 8)
        i = 0
        with profile(schedule=schedule(wait=1, warmup=1, active=2)) as prof:
            while i < 20:
                model(torch.randn(4, 8)).sum().backward()
                prof.step()
                i += 1
        prof.export_chrome_trace("mine.json")
        """)
    r = run_stepscope("profile", "own.py", "--json", cwd=workspace)
    assert r.returncode == 0, r.stderr
    assert "own torch.profiler.profile at" in r.stderr and "own.py:6" in r.stderr
    report = json.loads(r.stdout)
    assert len(report["steps"]) == 5
    assert ("own.py", 8) in _lines(report)
    assert not (workspace / "mine.json").exists()  # its profiler did not run


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_dataloader_workers(workspace: Path, context: str):
    _write(workspace, "workers.py", f"""\
        import torch
        from torch.utils.data import DataLoader, TensorDataset


        def main():
            data = TensorDataset(torch.randn(640, 16), torch.randint(0, 2, (640,)))
            loader = DataLoader(data, batch_size=32, num_workers=2, multiprocessing_context="{context}")
            model = torch.nn.Linear(16, 2)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                loss = torch.nn.functional.cross_entropy(model(x), y)
                loss.backward()
                opt.step()


        if __name__ == "__main__":
            main()
        """)
    report = _profile(workspace, "workers.py")
    assert ("workers.py", 10) in _lines(report)  # the batch read, on the loop line
    assert report["scenario"]["observed"]["data_source"]["num_workers"] == 2


def test_earlier_runs_are_never_overwritten(workspace: Path):
    first = _profile(workspace, "train_cpu.py", "--active", "3", "--note", "simplified input")
    second = _profile(workspace, "train_cpu.py", "--active", "3")
    assert Path(first["traces"][0]).parent != Path(second["traces"][0]).parent
    assert Path(first["traces"][0]).exists() and Path(second["traces"][0]).exists()
    assert first["scenario"]["note"] == "simplified input"


def test_run_to_end_and_the_run_marker(workspace: Path):
    _write(workspace, "tail.py", """\
        import os
        import torch
        model = torch.nn.Linear(4, 4)
        for i in range(12):
            model(torch.randn(2, 4)).sum().backward()
        print("after the loop, STEPSCOPE_RUN =", os.environ.get("STEPSCOPE_RUN"))
        """)
    stopped = _profile(workspace, "tail.py")
    log = (Path(stopped["traces"][0]).parent / "program.log").read_text()
    assert "after the loop" not in log  # a clean stop once the window is captured
    finished = _profile(workspace, "tail.py", "--run-to-end")
    log = (Path(finished["traces"][0]).parent / "program.log").read_text()
    assert "after the loop, STEPSCOPE_RUN = 1" in log
    assert len(finished["steps"]) == len(stopped["steps"]) == 5


def test_gpu_program_without_gpu_collection_is_refused(workspace: Path, tmp_path: Path):
    # Make the failure happen on purpose: torch claims a CUDA device, but this CPU build of the
    # profiler cannot collect CUDA activity.
    fake = tmp_path / "fake_gpu"
    fake.mkdir()
    (fake / "sitecustomize.py").write_text("import torch\ntorch.cuda.is_available = lambda: True\n")
    env_path = f"{fake}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    r = subprocess.run([sys.executable, "-m", "stepscope", "profile", "train_cpu.py", "--active", "3"],
                       cwd=workspace, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": env_path})
    assert r.returncode == 5, r.stderr
    assert "cannot collect GPU activity" in r.stderr and "--cpu-only" in r.stderr
    r = subprocess.run([sys.executable, "-m", "stepscope", "profile", "train_cpu.py", "--active", "3", "--cpu-only",
                        "--json"], cwd=workspace, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": env_path})
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["gpu"]["observed"] is False and "cpu-only" in report["gpu"]["reason"].replace("--", "")


def test_text_report_shows_shapes_and_memory_only_when_recorded(workspace: Path):
    _write(workspace, "mem.py", """\
        import torch
        model = torch.nn.Linear(32, 64)
        for i in range(12):
            x = torch.randn(8, 32)
            y = model(x)
            big = torch.zeros(1024, 1024)
        """)
    r = run_stepscope("profile", "mem.py", "--shapes", "--memory", cwd=workspace)
    assert r.returncode == 0, r.stderr
    text = r.stdout.splitlines()
    start = text.index(next(t for t in text if t.startswith("inputs and memory of the top lines")))
    assert "host memory allocated per step" in text[start]
    section = text[start + 1:text.index("", start)]
    blocks: dict[str, list[str]] = {}
    for row in section:  # "  mem.py:5   alloc ..." then its ops, indented further
        if not row.startswith("      "):
            where = row.split()[0]
            blocks[where] = [" ".join(row.split()[1:])]
        else:
            blocks[where].append(" ".join(row.split()))
    assert blocks["mem.py:5"][1].startswith("aten::linear [8, 32], [64, 32], [64] ×1 ")
    assert blocks["mem.py:6"][0].startswith("alloc 4.00 MiB, peak ")  # a 1024×1024 float tensor per step
    assert blocks["mem.py:6"][1].startswith("aten::zeros ×1 ")  # its size is a list, not a tensor input

    plain = run_stepscope("profile", "mem.py", cwd=workspace)
    assert plain.returncode == 0, plain.stderr
    # (a finding's text may speak of "allocator growth": only a memory figure is refused here)
    assert "inputs and memory" not in plain.stdout and not re.search(r"\balloc [0-9]", plain.stdout)
