"""A loop profiled with torch.profiler directly, not by Stepscope: a trace from elsewhere.

    python examples/scenarios/plain_profiler.py OUT.json

Plants three behaviours at once: a DataLoader whose samples wait on slow storage, a constant built
with `torch.arange` and copied to the device every step, and a `.item()` read-back. The trace has
Python stacks (`with_stack=True`) and no Stepscope labels, so `stepscope analyze` can name only the
functions' def lines; its findings say so. Refuses to overwrite an existing trace.
"""

import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule
from torch.utils.data import DataLoader, Dataset


class SlowStorage(Dataset):
    def __len__(self) -> int:
        return 64

    def __getitem__(self, i: int):
        time.sleep(0.003)  # stands for a read from slow storage
        return torch.full((64,), float(i % 5)), i % 4


def train(out: Path) -> None:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Linear(64, 4).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        if ProfilerActivity.CUDA not in torch.profiler.supported_activities():
            raise SystemExit("CUDA activity collection is unavailable: refusing to present a CPU trace as GPU analysis")
        activities.append(ProfilerActivity.CUDA)
    loader = DataLoader(SlowStorage(), batch_size=4, num_workers=0)
    with profile(activities=activities, schedule=schedule(wait=1, warmup=2, active=5), with_stack=True) as prof:
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            scale = torch.arange(4, dtype=torch.float32).to(device)
            loss = nn.functional.cross_entropy(model(x) * (1 + scale), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            if loss.item() > 100:
                break
            prof.step()
    prof.export_chrome_trace(str(out))


if __name__ == "__main__":
    target = Path(sys.argv[1])
    if target.exists():
        raise SystemExit(f"{target} exists: refusing to overwrite an earlier trace")
    train(target)
