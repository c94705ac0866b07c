"""Start-up cost: the first call pays a one-off load that later steps reuse.

`lookup()` fills its table on first use (the sleep stands for reading a vocabulary or a kernel
cache from disk). Expected finding: `startup-cost` (the first steps much slower than the window's
ms/step), on the GPU and on the CPU.
"""

import argparse
import time

import torch

_TABLE: dict[str, torch.Tensor] = {}


def lookup(device: torch.device) -> torch.Tensor:
    if "table" not in _TABLE:
        time.sleep(0.25)  # stands for a one-off load from disk
        _TABLE["table"] = torch.linspace(0.0, 1.0, 256, device=device)
    return _TABLE["table"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x = torch.randn(64, 256, device=device)
    w = torch.randn(256, 256, device=device) / 16
    for step in range(args.steps):  # the step
        table = lookup(device)
        h = torch.tanh(x @ w + table)
        x = torch.layer_norm(h, (256,))


if __name__ == "__main__":
    main()
