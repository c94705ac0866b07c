"""A GPU-bound training step (no data loading), used to measure what Stepscope's per-line
regions cost: `benchmarks/gpu_overhead.sh` profiles it with and without them, same options."""

import torch
from torch import nn
from torch.nn import functional as F


class Block(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x):
        h = self.norm(x)
        h = F.gelu(self.up(h))
        h = self.down(h)
        return x + h


def main() -> None:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    width, depth, batch = (1024, 8, 2048) if device.type == "cuda" else (64, 2, 32)
    model = nn.Sequential(*[Block(width) for _ in range(depth)]).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(batch, width, device=device)
    target = torch.randn(batch, width, device=device)
    for step in range(60):
        out = model(x)
        loss = F.mse_loss(out, target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
