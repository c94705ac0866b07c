"""Sync in step: the step reads a value back to the host (`.item()`) in its middle.

The host waits there for all the GPU work queued so far, and the GPU then waits for the host to
queue the rest. Expected finding on a GPU: `sync-in-step` on the `.item()` line; on a CPU nothing
waits for a device, so no finding (the static rule SS101 still flags the line).
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
    n = 1 << 25 if device.type == "cuda" else 1 << 15
    x = torch.rand(n, device=device)
    for step in range(args.steps):  # the step
        a = torch.sin(x) + torch.cos(x)
        b = torch.exp(-a * a)
        peak = b.max().item()
        c = torch.sigmoid(b / peak)
        x = torch.tanh(c) * 0.5 + torch.sqrt(c)


if __name__ == "__main__":
    main()
