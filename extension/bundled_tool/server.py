"""Starts the Stepscope language server that ships inside the VS Code extension, or its MCP server.

The extension runs `<python> <extension>/bundled/tool/server.py` for the language server, and the
editor's MCP support runs `<python> <extension>/bundled/tool/server.py mcp --root FOLDER
[--allow-run]` (`stepscope mcp`, docs/mcp.md); the MCP server needs the `mcp` SDK, which is not
bundled: it is imported from the interpreter's environment. The server and its
dependencies live in `bundled/libs` (pure Python) and `bundled/native/cp3XY` (compiled ones, per
Python version); both go first on sys.path so that whatever the user's environment has
installed (another pygls, an older stepscope) can never change the server that runs.
"""

import os
import sys

SUPPORTED_MIN = (3, 10)


def _fail(message: str) -> None:
    # stdout is the LSP stream: a reason goes to stderr, which the editor shows in its log.
    sys.stderr.write(f"stepscope: {message}\n")
    sys.stderr.flush()
    raise SystemExit(1)


def _bundled_paths() -> list:
    bundled = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    version = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    libs = os.path.join(bundled, "libs")
    native = os.path.join(bundled, "native", version)
    if not os.path.isdir(libs):
        _fail(f"the bundled server is missing ({libs} does not exist)")
    if not os.path.isdir(native):
        available = sorted(
            name for name in os.listdir(os.path.join(bundled, "native")) if name.startswith("cp")
        ) if os.path.isdir(os.path.join(bundled, "native")) else []
        _fail(
            f"no bundled native libraries for Python {sys.version_info[0]}.{sys.version_info[1]} "
            f"(this build has: {', '.join(available) or 'none'})"
        )
    return [libs, native]


def _utf8_stdio() -> None:
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(encoding="utf-8", errors="strict" if stream is not sys.stderr else "replace")


def main() -> None:
    if sys.version_info < SUPPORTED_MIN:
        _fail(
            "needs Python %d.%d or newer, this is %d.%d"
            % (SUPPORTED_MIN + tuple(sys.version_info[:2]))
        )
    sys.path[:0] = _bundled_paths()
    # Subprocesses (the agent in the user's interpreter) inherit UTF-8 too.
    os.environ.setdefault("PYTHONUTF8", "1")
    _utf8_stdio()

    if sys.argv[1:2] == ["mcp"]:
        from stepscope.cli import main as cli_main

        raise SystemExit(cli_main(sys.argv[1:]))

    from stepscope.lsp.server import start_stdio

    start_stdio()


if __name__ == "__main__":
    main()
