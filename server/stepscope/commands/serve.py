"""`stepscope serve`: the language server on stdio."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (the default)")


def run(args: argparse.Namespace) -> int:
    from ..lsp.server import start_stdio

    start_stdio()
    return 0
