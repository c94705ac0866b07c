"""Small launches: a hand-written update loop touches 32 small tensors one at a time.

Each tensor gets three tiny element-wise operations per step: 96 kernels of a few microseconds,
each paying its own launch. Expected finding on a GPU: `small-launches`; on a CPU there are no
kernels to observe, so no finding.
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
    params = [torch.randn(32, 32, device=device) for _ in range(32)]
    for step in range(args.steps):  # the step
        for p in params:
            p.mul_(0.99).add_(0.001).clamp_(-4.0, 4.0)


if __name__ == "__main__":
    main()
