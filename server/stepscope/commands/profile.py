"""`stepscope profile SCRIPT`: capture a step under torch.profiler and attribute it to lines."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("script")


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError
