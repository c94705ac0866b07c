"""Dominant op: one large matrix product holds most of the step, beside a few small ops.

Expected finding: `dominant-op` on the `y = x @ w` line (aten::mm), on the GPU and on the CPU.
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
    rows, n = (4096, 4096) if device.type == "cuda" else (128, 1024)
    x = torch.randn(rows, n, device=device)
    w = torch.randn(n, n, device=device) / n**0.5
    bias = torch.randn(n, device=device)
    for step in range(args.steps):  # the step
        y = x @ w
        x = nn.functional.normalize(torch.relu(y + bias), dim=1)


if __name__ == "__main__":
    main()
