"""The example training step on a GPU, with the problems a trace should reveal.

- A constant tensor (class weights) is built on the host and copied to the device every step.
- The loss is read back with `.item()` every step: the host waits for the device.
- The batch is read in the main process (num_workers=0) from a dataset that decodes on the CPU.

`stepscope profile examples/train_gpu.py` (falls back to the CPU when no GPU is present);
`stepscope profile examples/train_gpu.py -- --compile` runs the model through torch.compile.
"""

import argparse
import os

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset


class DecodeDataset(Dataset):
    def __init__(self, n: int, side: int):
        self.n, self.side = n, side

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        g = torch.Generator().manual_seed(i)
        image = torch.rand(3, self.side, self.side, generator=g)
        image = F.avg_pool2d(image, 3, 1, 1)  # the CPU "decode"
        return image, i % 100


def build_model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(),
        nn.Conv2d(64, 128, 3, padding=1, stride=2), nn.ReLU(),
        nn.Conv2d(128, 256, 3, padding=1, stride=2), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 100),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--side", type=int, default=64)
    parser.add_argument("--compile", action="store_true", help="run the model through torch.compile")
    args = parser.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    loader = DataLoader(DecodeDataset(args.steps * args.batch_size, args.side), batch_size=args.batch_size)
    model = build_model().to(device)
    if args.compile:
        model = torch.compile(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    model.train()
    total = 0.0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        weights = torch.linspace(0.5, 1.5, 100).to(device)  # rebuilt and copied every step
        logits = model(images)
        loss = F.cross_entropy(logits, labels, weight=weights)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        total += loss.item()  # waits for the device every step

    if os.environ.get("STEPSCOPE_RUN") != "1":
        print(f"mean loss {total / args.steps:.4f}")


if __name__ == "__main__":
    main()
