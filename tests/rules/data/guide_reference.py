"""The measurement guide's reference step (GUIDE.md §8), as a user would write it.

Four steps with readable boundaries: the batch read, the transfer and the training are labelled;
the iterator exists before the window; the trace name is checked to be new; GPU collection is
refused rather than silently missing; prof.step() advances the schedule after each step.
`model`, `optimizer`, `loss_fn`, `loader` and `device` come from the caller's setup.
"""

from pathlib import Path

import torch
from torch.profiler import (
    profile, schedule, record_function,
    ProfilerActivity, supported_activities,
)

trace = Path("trace-etape.json")
if trace.exists():
    raise FileExistsError("choose a new trace name")

activities = [ProfilerActivity.CPU]
if device.type == "cuda":
    if ProfilerActivity.CUDA not in supported_activities():
        raise RuntimeError("GPU collection is not available in this build")
    activities.append(ProfilerActivity.CUDA)

iterator = iter(loader)
model.train()

with profile(
    activities=activities,
    schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
    record_shapes=False, profile_memory=False, with_stack=False,
    on_trace_ready=lambda p: p.export_chrome_trace(str(trace)),
) as prof:
    for _ in range(4):
        with record_function("lecture_batch_cpu"):
            x, y = next(iterator)
        with record_function("transfert"):
            x, y = x.to(device), y.to(device)
        with record_function("entrainement"):
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
        prof.step()

print(prof.key_averages().table(
    sort_by="self_cpu_time_total", row_limit=8,
))
