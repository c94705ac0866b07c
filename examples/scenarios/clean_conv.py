"""Clean control: a small convolution network, batches prepared on the device in advance.

No host-device copy, no sync, start-up done before the loop. Expected: no finding (on the
GPU and on the CPU).
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
    batch, size = (256, 64) if device.type == "cuda" else (8, 16)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                          nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(16, 10)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randn(batch, 3, size, size, device=device)
    labels = torch.randint(0, 10, (batch,), device=device)
    # Start-up stays outside the step: libraries initialise, kernels are chosen and the
    # optimizer state is created before the loop, as a careful benchmark does.
    for _ in range(3):
        loss = nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    for step in range(args.steps):  # the step
        loss = nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
