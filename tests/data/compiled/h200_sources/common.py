"""What every case shares: the device, the number of steps, and the loop that runs a case's step."""

from __future__ import annotations

import argparse

import torch


def arguments(variants: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--variant", choices=variants, default=variants[0])
    p.add_argument("--steps", type=int, default=40)
    return p.parse_args()


def device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"
