"""Small real torch programs for measure's tests, written into a workspace by each test."""

from __future__ import annotations

import subprocess
from pathlib import Path

# A step of a few milliseconds whose time is set by a sleep (stable on a busy machine), with a loss.
SLEEPY = '''import argparse
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=40)
p.add_argument("--pause", type=float, default=0.004)
args = p.parse_args()
torch.manual_seed(0)
model = torch.nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(32, 16)
y = torch.randn(32, 1)
for step in range(args.steps):
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    time.sleep(args.pause)
'''

# A DataLoader-fed step: the batch size is known, so samples/s is too.
LOADER = '''import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
data = TensorDataset(torch.randn(24 * 16, 8), torch.randn(24 * 16, 1))
loader = DataLoader(data, batch_size=16)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
'''


def write(ws: Path, name: str, text: str) -> Path:
    path = ws / name
    path.write_text(text)
    return path


def loop_line(path: Path) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if line.startswith(("for ", "while ")))


def commit(ws: Path, message: str = "work") -> None:
    for args in (["add", "-A"], ["-c", "user.email=dev@example.com", "-c", "user.name=Dev", "commit", "-q", "-m",
                                 message]):
        subprocess.run(["git", "-C", str(ws), *args], check=True, capture_output=True)

# A step fed by one DataLoader worker that takes ~50 ms per batch (a sleep: stable on a busy
# machine) and keeps `--ahead` batches ready; `--pause` seconds of one-off work in the first step
# (as a first call's compilation, or the profiler's own start-up on a GPU) lets the worker fill them.
WORKER_FED = '''import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--pause", type=float, default=0.0)
p.add_argument("--ahead", type=int, default=8)
args = p.parse_args()


class Slow(Dataset):
    def __len__(self):
        return 400

    def __getitem__(self, i):
        time.sleep(0.0125)
        return torch.full((8,), float(i % 10) / 10), torch.zeros(1)


torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(Slow(), batch_size=4, num_workers=1, prefetch_factor=args.ahead)
for i, (x, y) in enumerate(loader):
    if i == 0:
        time.sleep(args.pause)
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
'''
