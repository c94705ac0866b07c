"""A whole training step captured by hand with torch.cuda.graph and replayed (`graph`), or eager."""

import torch
from torch import nn

from common import arguments, device


def build(variant: str):
    dev = device()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1024, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                          nn.Linear(2048, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    static_x = torch.randn(256, 1024, device=dev)
    static_y = torch.randint(0, 10, (256,), device=dev)
    loss_fn = nn.CrossEntropyLoss()

    def eager_step() -> None:
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(static_x), static_y)
        loss.backward()
        opt.step()

    if variant == "eager" or dev != "cuda":
        return lambda i: eager_step()

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up on a side stream, as the CUDA graphs docs do
        for _ in range(3):
            eager_step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = loss_fn(model(static_x), static_y)
        static_loss.backward()
        opt.step()

    def step(i: int) -> None:
        static_x.copy_(torch.randn(256, 1024, device=dev))
        graph.replay()

    return step


if __name__ == "__main__":
    args = arguments(["graph", "eager"])
    step = build(args.variant)
    for i in range(args.steps):
        step(i)
