"""A step that augments its batch sample by sample on the host before the upload (`host`, default),
or the same augmentation on the whole batch on the device after it (`device`): per-sample host work
that keeps the GPU idle, outside the batch read."""

import random

import torch
import torch.nn.functional as F

from common import arguments, device


def augment(images: torch.Tensor, rng: random.Random) -> torch.Tensor:
    out = []
    for img in images:
        if rng.random() < 0.5:
            img = img.flip(-1)
        img = img + 0.05 * torch.randn_like(img)
        out.append((img - img.mean()) / (img.std() + 1e-5))
    return torch.stack(out)


def augment_on_device(images: torch.Tensor) -> torch.Tensor:
    flip = torch.rand(len(images), 1, 1, 1, device=images.device) < 0.5
    images = torch.where(flip, images.flip(-1), images)
    images = images + 0.05 * torch.randn_like(images)
    mean = images.mean(dim=(1, 2, 3), keepdim=True)
    std = images.std(dim=(1, 2, 3), keepdim=True)
    return (images - mean) / (std + 1e-5)


def build(variant: str):
    dev = device()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    # host tensors, as a DataLoader hands them over
    batches = [(torch.randn(64, 3, 32, 32), torch.randint(0, 10, (64,))) for _ in range(4)]
    rng = random.Random(0)

    def step(i: int) -> None:
        x, y = batches[i % len(batches)]
        if variant == "host":
            x = augment(x, rng)
        x, y = x.to(dev), y.to(dev)
        if variant == "device":
            x = augment_on_device(x)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


if __name__ == "__main__":
    args = arguments(["host", "device"])
    step = build(args.variant)
    for i in range(args.steps):
        step(i)
