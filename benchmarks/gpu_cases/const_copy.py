"""Two constants rebuilt and copied to the device in every step (`rebuilt`), or built once (`hoisted`)."""

import torch

from common import arguments, device


def build(variant: str):
    dev = device()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 1024)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    batches = [torch.randn(512, 1024, device=dev) for _ in range(4)]
    positions = torch.arange(512 * 1024, dtype=torch.float32).reshape(512, 1024).to(dev)
    scale = torch.tensor([0.5] * 1024).to(dev)

    def step(i: int) -> None:
        x = batches[i % len(batches)]
        if variant == "rebuilt":
            pos = torch.arange(512 * 1024, dtype=torch.float32).reshape(512, 1024).to(dev)
            s = torch.tensor([0.5] * 1024).to(dev)
        else:
            pos, s = positions, scale
        out = model(x + pos * 1e-6) * s
        loss = out.pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


if __name__ == "__main__":
    args = arguments(["rebuilt", "hoisted"])
    step = build(args.variant)
    for i in range(args.steps):
        step(i)
