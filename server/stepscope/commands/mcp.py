"""`stepscope mcp`: the MCP server on stdio (docs/mcp.md).

Without the `mcp` SDK installed it says, in one line, to install `stepscope[mcp]` (exit 2).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UsageError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-run", action="store_true",
                   help="let the tools profile, measure and try_fix run your program (its step runs for real); "
                        "without it they are refused")
    p.add_argument("--root", help="the workspace: scripts are found and runs recorded under it (default: the "
                                  "current folder)")


def run(args: argparse.Namespace) -> int:
    root = Path(args.root).resolve() if args.root else Path.cwd()
    if not root.is_dir():
        raise UsageError(f"--root is not a folder: {args.root}")
    try:
        from ..mcp.server import serve_stdio
    except ImportError as e:
        if (e.name or "").split(".")[0] not in ("mcp", "mcp_types"):
            raise
        raise UsageError("the MCP server needs the `mcp` package: pip install 'stepscope[mcp]'") from None

    serve_stdio(root, allow_run=args.allow_run)
    return 0
