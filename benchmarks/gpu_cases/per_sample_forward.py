"""A model whose forward runs a Python loop over the samples (`loop`, default: a list comprehension
of small matmuls, each recording its own backward), or the same layer on the whole batch
(`batched`): launches that a finding must place on the forward statement, not on `loss.backward()`
where most of them (the backward's) run."""

import torch
import torch.nn.functional as F

from common import arguments, device


class PerSample(torch.nn.Module):
    def __init__(self, loop: bool):
        super().__init__()
        self.loop = loop
        self.hidden = torch.nn.Linear(256, 256)
        self.head = torch.nn.Linear(256, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.loop:
            h = torch.stack([torch.relu(self.hidden(row)) for row in x])
        else:
            h = torch.relu(self.hidden(x))
        return self.head(h)


def build(variant: str):
    dev = device()
    torch.manual_seed(0)
    model = PerSample(loop=variant == "loop").to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    batches = [(torch.randn(32, 256, device=dev), torch.randint(0, 10, (32,), device=dev)) for _ in range(4)]

    def step(i: int) -> None:
        x, y = batches[i % len(batches)]
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


if __name__ == "__main__":
    args = arguments(["loop", "batched"])
    step = build(args.variant)
    for i in range(args.steps):
        step(i)
