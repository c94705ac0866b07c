"""Repeated copy: a constant position table is built on the host and moved to the device every step.

`torch.arange(...).to(device)` runs inside the loop although its value never changes. The batch
also moves to the device every step (`x.to(device)`): that copy is data, not this finding.
Expected finding on a GPU: `repeated-copy` on the `positions = ...` line; on a CPU there is no
host-to-device copy to observe, so no finding.
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
    seq, width = 256, 64
    batches = [torch.randn(8, seq, width) for _ in range(args.steps)]
    model = nn.Linear(width, width).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for x in batches:  # the step
        x = x.to(device)
        positions = torch.arange(seq, dtype=torch.float32).to(device)
        h = model(x + positions[None, :, None] / seq)
        loss = h.square().mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
