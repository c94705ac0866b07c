"""Record reference GPU traces on a CUDA machine, with the step time measured outside the profiler.

    python benchmarks/trace_record_gpu.py OUT_DIR [--big-active N]

Writes, for each small scenario (`sync`: the step ends in `.item()`; `async`: no host sync, the GPU
runs behind the CPU), a run folder `OUT_DIR/<scenario>/` like Stepscope's agent writes
(trace.json.gz, files.json, scenario.json); the scenario's `measured` holds ms/step timed without
the profiler over 30 steps (CUDA synchronised at both ends), to compare with `stepscope analyze`.
`OUT_DIR/big.json.gz` is a large trace with Python stacks and shapes (speed benchmarks).

Every statement of the step loop is labelled the way the agent labels it at run time; the line
numbers in the labels are the lines of this file.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

HERE = Path(__file__).resolve()


def line_of(marker: str) -> int:
    for n, text in enumerate(HERE.read_text().splitlines(), 1):
        if text.rstrip().endswith(f"# {marker}") and "line_of" not in text:
            return n
    raise SystemExit(f"marker {marker} not found")


def label(marker: str, suffix: str = "") -> str:
    return f"ss:f0:{line_of(marker)}{suffix}"


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class Small:
    """The small scenario's state, built once so that timed steps hold only the step."""

    def __init__(self, steps: int) -> None:
        dev = torch.device("cuda")
        torch.manual_seed(0)
        self.dev = dev
        self.model = Model().to(dev)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=1e-3)
        self.batches = iter([torch.randn(512, 1024).pin_memory() for _ in range(steps)])
        self.a = torch.randn(4096, 4096, device=dev)


def small_loop(state: Small, steps: int, *, sync: bool, prof=None, labels: dict[str, str] | None = None) -> None:
    model, opt, batches, a, dev = state.model, state.opt, state.batches, state.a, state.dev
    rf = (lambda key, s="": record_function(labels[key] + s)) if labels else (lambda key, s="": _Null())
    for _ in range(steps):
        if prof is not None:
            prof.step()
        with rf("loop", ":next"):
            batch = next(batches)  # loop
        with rf("copy"):
            x = batch.to(dev, non_blocking=True)  # copy
        with rf("forward"):
            y = model(x)  # forward
        with rf("matmul"):
            z = a @ a  # matmul
        with rf("loss"):
            loss = y.pow(2).mean() + z.mean() * 0  # loss
        with rf("backward"):
            loss.backward()  # backward
        with rf("optim"):
            opt.step(); opt.zero_grad()  # optim
        if sync:
            with rf("item"):
                loss.item()  # item


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def measure(sync: bool) -> dict:
    state = Small(35)
    small_loop(state, 5, sync=sync)  # warm-up: allocator, cuBLAS handles
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    small_loop(state, 30, sync=sync)
    torch.cuda.synchronize()
    total = time.perf_counter() - t0
    return {"ms_per_step": total / 30 * 1000.0, "steps": 30, "warmup_steps": 5,
            "method": "perf_counter around 30 steps after 5 warm-up steps, CUDA synchronised at both ends"}


def record_small(out: Path, sync: bool) -> None:
    run = out / ("sync" if sync else "async")
    run.mkdir(parents=True)
    keys = ["loop", "copy", "forward", "matmul", "loss", "backward", "optim", "item"]
    labels = {k: label(k) for k in keys}
    raw = run / "trace.json"
    sched = schedule(wait=1, warmup=2, active=4, repeat=1)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], schedule=sched,
                 on_trace_ready=lambda p: p.export_chrome_trace(str(raw))) as prof:
        small_loop(Small(8), 8, sync=sync, prof=prof, labels=labels)
    with open(raw, "rb") as src, gzip.open(run / "trace.json.gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    raw.unlink()
    (run / "files.json").write_text(json.dumps({"root": str(HERE.parent), "files": {"f0": HERE.name}}))
    scenario = {
        "machine": {"host": platform.node(), "device": torch.cuda.get_device_name(0),
                    "devices": [torch.cuda.get_device_name(0)], "torch": torch.__version__,
                    "cuda_build": torch.version.cuda},
        "schedule": {"wait": 1, "warmup": 2, "active": 4, "repeat": 1},
        "batch_size": 512,
        "lines": {k: int(v.split(":")[2]) for k, v in labels.items()},
    }
    scenario["measured"] = measure(sync)
    (run / "scenario.json").write_text(json.dumps(scenario, indent=1))


def record_big(out: Path, active: int) -> None:
    dev = torch.device("cuda")
    layer = torch.nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=8).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(16, 256, 512, device=dev)
    raw = out / "big.json"
    sched = schedule(wait=1, warmup=1, active=active, repeat=1)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], schedule=sched, with_stack=True,
                 record_shapes=True, on_trace_ready=lambda p: p.export_chrome_trace(str(raw))) as prof:
        for _ in range(active + 2):
            prof.step()
            loss = model(x).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
    size = raw.stat().st_size
    with open(raw, "rb") as src, gzip.open(out / "big.json.gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    raw.unlink()
    print(f"big trace: {size / 1e6:.1f} MB json, {(out / 'big.json.gz').stat().st_size / 1e6:.1f} MB gz", flush=True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--big-active", type=int, default=0, help="active steps of the large trace (0: none)")
    args = p.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("needs a CUDA device")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for sync in (True, False):
        record_small(out, sync)
        name = "sync" if sync else "async"
        print(f"{name}: measured {json.loads((out / name / 'scenario.json').read_text())['measured']}", flush=True)
    if args.big_active:
        record_big(out, args.big_active)


if __name__ == "__main__":
    sys.exit(main())
