"""A tiny Accelerate training loop (on the CPU; `-- --device cuda` on a GPU): a small MLP on synthetic
data, nothing downloaded.

The loop is this file's own (Accelerate wraps the model, optimizer and data, not the loop), so the
step is found as for any loop:
    stepscope profile examples/accelerate_tiny.py
    stepscope measure examples/accelerate_tiny.py
With `--accumulate N`, `accelerator.accumulate` steps the optimizer every N iterations; each
iteration of the loop is a step (a micro-batch: see docs/frameworks/accelerate.md).

The program times its own iterations (end of one to the end of the next, the batch read included)
and prints each on stderr as `own step N: X ms` (docs/frameworks/accelerate.md).
"""

import argparse
import sys
import time

import torch
from accelerate import Accelerator
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset


class MLP(nn.Module):
    def __init__(self, features: int = 64, width: int = 256, classes: int = 10):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU())
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        h = self.body(x)
        return self.head(h)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40, help="iterations of the loop")
    parser.add_argument("--accumulate", type=int, default=1, help="iterations per optimizer step")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--device", default="cpu", help="cpu (the tests), or gpu/cuda")
    args = parser.parse_args()
    torch.manual_seed(0)
    accelerator = Accelerator(cpu=args.device == "cpu", gradient_accumulation_steps=args.accumulate)
    x = torch.randn(args.steps * args.batch_size, 64)
    y = torch.randint(0, 10, (args.steps * args.batch_size,))
    model = MLP()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    ended = time.perf_counter()
    for step, (inputs, labels) in enumerate(loader):
        with accelerator.accumulate(model):
            logits = model(inputs)
            loss = F.cross_entropy(logits, labels)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        now = time.perf_counter()  # end of one iteration to the end of the next: batch read included
        print(f"own step {step}: {(now - ended) * 1e3:.3f} ms", file=sys.stderr)
        ended = now


if __name__ == "__main__":
    main()
