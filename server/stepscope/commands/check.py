"""`stepscope check PATH...`: static rules. Must not import torch or the LSP stack."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    p.add_argument("--select", help="codes or prefixes to run (SS = every rule)")
    p.add_argument("--ignore", help="codes or prefixes to skip")


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError
