"""The batch read inside the function the loop calls: `step()` reads its batch with `next(it)` under a
`read_batch` label, from a loader slower than the step (`slow`, default), or from batches prepared in
advance (`prepared`)."""

import time

import torch
from torch.profiler import record_function

from common import arguments, device


def build(variant: str):
    dev = device()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    prepared = [(torch.randn(256, 512), torch.randint(0, 10, (256,))) for _ in range(4)]

    def batches():
        i = 0
        while True:
            if variant == "slow":
                time.sleep(0.03)  # storage slower than the step
            yield prepared[i % len(prepared)]
            i += 1

    it = iter(batches())

    def step(i: int) -> None:
        with record_function("read_batch"):
            x, y = next(it)
        x, y = x.to(dev), y.to(dev)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


if __name__ == "__main__":
    args = arguments(["slow", "prepared"])
    step = build(args.variant)
    for i in range(args.steps):
        step(i)
