"""A pre-norm transformer block (attention + MLP) under torch.compile: default mode, CUDA graphs
(`reduce-overhead`), or eager."""

import math

import torch
from torch import nn

from common import arguments, device


class Attention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        mask = torch.triu(torch.ones(t, t, device=x.device, dtype=torch.bool), diagonal=1)
        scores = scores.masked_fill(mask, float("-inf"))
        att = torch.softmax(scores, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        return self.out(y)


class TransformerBlock(nn.Module):
    def __init__(self, width: int = 768, heads: int = 12):
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.attn = Attention(width, heads)
        self.norm2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.proj = nn.Linear(4 * width, width)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        h = torch.nn.functional.gelu(self.fc(self.norm2(x)))
        x = x + self.proj(h)
        return x


def build(variant: str):
    dev = device()
    torch.manual_seed(0)
    model = TransformerBlock().to(dev)
    if variant == "eager":
        runnable = model
    else:
        runnable = torch.compile(model, mode=None if variant == "default" else variant)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(16, 256, 768, device=dev)

    def step(i: int) -> None:
        out = runnable(x)
        loss = out.float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


if __name__ == "__main__":
    args = arguments(["default", "reduce-overhead", "eager"])
    step = build(args.variant)
    for i in range(args.steps):
        step(i)
