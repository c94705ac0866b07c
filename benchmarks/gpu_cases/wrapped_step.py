"""Host work inside wrappers: a `torch.no_grad()` block of host-side statements before the upload and
the forward under `torch.autocast` (`wrapped`, default; `compiled`: the same with the model under
`torch.compile`), or the batch prepared before the loop (`prepared`). A finding about the host work
names the statement inside the block, never the `with` line, the autocast context or the compiled
region that wraps other work."""

import torch
import torch.nn.functional as F

from common import arguments, device


def build(variant: str):
    dev = device()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 10)).to(dev)
    forward = torch.compile(model) if variant == "compiled" else model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batches = [(torch.randn(64, 512), torch.randint(0, 10, (64,))) for _ in range(4)]
    if variant == "prepared":
        batches = [(torch.stack([(r - r.mean()) / (r.std() + 1e-5) for r in x]), y) for x, y in batches]
    amp = "cuda" if dev == "cuda" else "cpu"

    def step(i: int) -> None:
        x, y = batches[i % len(batches)]
        if variant != "prepared":
            with torch.no_grad():
                x = x + 0.01 * torch.randn_like(x)
                x = torch.stack([(r - r.mean()) / (r.std() + 1e-5) for r in x])
                x = x.clamp(-5.0, 5.0)
        x, y = x.to(dev), y.to(dev)
        with torch.autocast(amp, dtype=torch.bfloat16):
            loss = F.cross_entropy(forward(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


if __name__ == "__main__":
    args = arguments(["wrapped", "compiled", "prepared"])
    step = build(args.variant)
    for i in range(args.steps):
        step(i)
