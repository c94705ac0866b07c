"""GPU not observed: GPU work profiled without GPU collection.

Profile it with `--cpu-only` on a GPU machine: the trace then holds no GPU events although the
program ran on the GPU. Expected finding there: `gpu-not-observed` (GPU time unknown, not zero).
On a CPU-only machine the program does CPU work only and no GPU event is expected: no finding.
"""

import argparse

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.LayerNorm(256), nn.Linear(256, 128)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 128, device=device)
    for step in range(args.steps):  # the step
        loss = model(x).square().mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
