"""A step that reads the loss and the predictions back to the host every step (`syncs`), or not."""

import torch
import torch.nn.functional as F

from common import arguments, device


def build(variant: str):
    dev = device()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048),
                                torch.nn.ReLU(), torch.nn.Linear(2048, 10)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batches = [(torch.randn(256, 512, device=dev), torch.randint(0, 10, (256,), device=dev)) for _ in range(4)]
    seen = {"loss": 0.0, "correct": 0}

    def step(i: int) -> None:
        x, y = batches[i % len(batches)]
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if variant == "syncs":
            seen["loss"] += loss.item()
            seen["correct"] += int((logits.argmax(1).cpu() == y.cpu()).sum())

    return step


if __name__ == "__main__":
    args = arguments(["syncs", "nosyncs"])
    step = build(args.variant)
    for i in range(args.steps):
        step(i)
