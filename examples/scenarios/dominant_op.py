"""Dominant op: one large matrix product holds most of the step, beside a few small ops.

Expected finding: `dominant-op` on the `y = x @ w` line (aten::mm), on the GPU and on the CPU.
"""

import argparse

import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    n = 4096 if device.type == "cuda" else 384
    x = torch.randn(n, n, device=device)
    w = torch.randn(n, n, device=device) / n
    bias = torch.randn(n, device=device)
    for step in range(args.steps):  # the step
        y = x @ w
        y = torch.relu(y + bias)
        x = y / (y.norm() + 1.0) * n


if __name__ == "__main__":
    main()
