"""A small CPU training script with two planted problems, for trying Stepscope.

- The batch read is slow: the dataset decodes each sample with a busy CPU loop, and the
  DataLoader reads in the main process (num_workers=0).
- The loop synchronises every step: `loss.item()` waits for the step's work to finish.

Run it as a normal script (`python examples/train_cpu.py`), or profile the training loop:
`stepscope profile examples/train_cpu.py` (Stepscope picks the loop that calls backward).
"""

import argparse
import os

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset


class SlowDecodeDataset(Dataset):
    """Synthetic samples whose 'decoding' costs CPU time, like a JPEG pipeline would."""

    def __init__(self, n: int, features: int, decode_work: int):
        self.n = n
        self.features = features
        self.decode_work = decode_work

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        g = torch.Generator().manual_seed(i)
        image = torch.rand(3, self.decode_work, self.decode_work, generator=g)
        # The slow part of the batch read: "decode" and resize a synthetic image.
        image = F.avg_pool2d(F.avg_pool2d(image, 5, 1, 2), 5, 1, 2)
        x = F.adaptive_avg_pool2d(image, 16).flatten()[: self.features]
        y = int(i % 10)
        return x, y


def build_model(features: int) -> nn.Module:
    return nn.Sequential(
        nn.Linear(features, 512),
        nn.ReLU(),
        nn.Linear(512, 512),
        nn.ReLU(),
        nn.Linear(512, 10),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--features", type=int, default=768)
    parser.add_argument("--decode-work", type=int, default=72)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    data = SlowDecodeDataset(args.steps * args.batch_size, args.features, args.decode_work)
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=False, num_workers=0)
    model = build_model(args.features)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()

    running = 0.0
    model.train()
    for x, y in loader:
        optimizer.zero_grad(set_to_none=True)
        logits = model(x)
        loss = loss_fn(logits, y)
        loss.backward()
        optimizer.step()
        running += loss.item()  # synchronises every step

    if os.environ.get("STEPSCOPE_RUN") != "1":
        print(f"mean loss {running / max(1, args.steps):.4f}")


if __name__ == "__main__":
    main()
