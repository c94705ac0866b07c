"""A real MCP client (the SDK's `stdio_client` + `ClientSession`) talking to `python -m stepscope
mcp` in a subprocess, as an MCP host starts it."""

from __future__ import annotations

import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.conftest import REPO


def server_parameters(root: Path, *, allow_run: bool, path_first: Path | None = None) -> StdioServerParameters:
    """`path_first`: a folder put before Stepscope on the server's path (a stand-in package)."""
    args = ["-m", "stepscope", "mcp", "--root", str(root)] + (["--allow-run"] if allow_run else [])
    # the client passes only a few variables on: the server imports this checkout's Stepscope
    path = [str(path_first)] if path_first else []
    return StdioServerParameters(command=sys.executable, args=args, cwd=str(root),
                                 env={"PYTHONPATH": os.pathsep.join([*path, str(REPO / "server")])})


@asynccontextmanager
async def session(root: Path, *, allow_run: bool = False, path_first: Path | None = None
                  ) -> AsyncIterator[ClientSession]:
    async with stdio_client(server_parameters(root, allow_run=allow_run, path_first=path_first)) as (read, write):
        async with ClientSession(read, write) as client:
            await client.initialize()
            yield client


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", None) == "text")
