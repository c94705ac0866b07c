"""`stepscope analyze TRACE|DIR`: analyse existing profiler traces."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("trace", help="a trace (.json / .json.gz) or a folder of per-rank traces")
    p.add_argument("--source-root", help="folder that source paths in the trace are relative to")
    p.add_argument("--json", action="store_true", help="print the report as one JSON document")


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError
