"""A tiny DDP training program for the launcher and `--nproc` tests (CPU, gloo), written into a
workspace by each test."""

from __future__ import annotations

import textwrap
from pathlib import Path

# `{prologue}` runs first, `{init}` forms the process group (from the environment torchrun gives
# a worker, by default), `{fail}` is spliced into the step loop.
_TEMPLATE = """\
    import os
    import signal
    import sys
    import time

    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel

    {prologue}
    {init}
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for i in range(30):
        x = torch.randn(16, 32)
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        {fail}
    dist.destroy_process_group()
"""

# Every rank records its pid in $PIDS_FILE (to check that nothing survives) and prints the
# environment a torchrun worker gets.
RECORD_PIDS = """\
with open(os.environ["PIDS_FILE"], "a") as f:
    f.write(f"{os.getpid()}\\n")
print("env", *(f"{k}={os.environ.get(k)}" for k in
               ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "STEPSCOPE_RUN")))"""


def write_ddp_program(ws: Path, name: str, *, prologue: str = "pass",
                      init: str = 'dist.init_process_group("gloo")', fail: str = "pass") -> Path:
    """`ws/name`, the program with its slots filled (`prologue` and `init` at the top level, `fail`
    one statement in the loop)."""
    path = ws / name
    path.write_text(textwrap.dedent(_TEMPLATE).format(prologue=prologue, init=init, fail=fail))
    return path
