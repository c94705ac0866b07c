"""Missing label: a region label written in the step never appears in the trace.

`record_function("augment")` sits on a branch that the window never takes (`--augment` is off),
so a reader expecting an `augment` region in the trace would not find it. Expected finding:
`missing-label` on that line, on the GPU and on the CPU; the `normalise` label is present.
"""

import argparse

import torch
from torch.profiler import record_function


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--augment", action="store_true")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x = torch.randn(64, 128, device=device)
    w = torch.randn(128, 128, device=device) / 12
    for step in range(args.steps):  # the step
        if args.augment:
            with record_function("augment"):
                x = x + 0.01 * torch.randn_like(x)
        with record_function("normalise"):
            x = torch.layer_norm(torch.tanh(x @ w), (128,))


if __name__ == "__main__":
    main()
