"""An MLP whose forward Inductor fuses (norms, activations, residuals), compiled or eager."""

import torch
from torch import nn

from common import arguments, device


class Block(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x):
        h = self.norm(x)
        h = self.up(h)
        h = torch.nn.functional.gelu(h) * torch.sigmoid(h)
        h = self.down(h)
        return x + 0.5 * h


class MLP(nn.Module):
    def __init__(self, width: int = 1024, depth: int = 4):
        super().__init__()
        self.blocks = nn.ModuleList(Block(width) for _ in range(depth))
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(torch.tanh(x))


def build(variant: str):
    dev = device()
    torch.manual_seed(0)
    model = MLP().to(dev)
    runnable = torch.compile(model) if variant == "compiled" else model
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(512, 1024, device=dev)
    y = torch.randint(0, 10, (512,), device=dev)

    def step(i: int) -> None:
        out = runnable(x)
        loss = torch.nn.functional.cross_entropy(out, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


if __name__ == "__main__":
    args = arguments(["compiled", "eager"])
    step = build(args.variant)
    for i in range(args.steps):
        step(i)
