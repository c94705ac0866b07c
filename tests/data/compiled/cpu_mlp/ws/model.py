"""A small MLP whose blocks Inductor fuses across statements."""
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 2 * width)
        self.down = nn.Linear(2 * width, width)

    def forward(self, x):
        h = self.norm(x)
        h = self.up(h)
        a = torch.nn.functional.gelu(h)
        b = torch.sigmoid(h)
        h = self.down(a * b)
        return x + 0.5 * h


class MLP(nn.Module):
    def __init__(self, width=32, depth=2):
        super().__init__()
        self.blocks = nn.ModuleList(Block(width) for _ in range(depth))
        self.head = nn.Linear(width, 4)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(torch.tanh(x))
