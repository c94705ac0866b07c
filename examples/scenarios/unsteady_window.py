"""Unsteady window: every third step also writes its metrics to slow storage.

Step times alternate between two levels, so one active window mixes two different steps (the sleep
stands for the periodic write).
Expected finding: `unsteady-window`, on the GPU and on the CPU.
"""

import argparse
import time

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    width = 128
    model = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.LayerNorm(width), nn.Linear(width, width)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, width, device=device)
    for step in range(args.steps):  # the step
        loss = model(x).square().mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % 3 == 2:
            time.sleep(0.005)  # stands for a periodic write of metrics to slow storage


if __name__ == "__main__":
    main()
