"""The MCP server (`stepscope mcp`): Stepscope's commands as tools an MCP client calls over stdio.

The only part of Stepscope that imports the `mcp` SDK. `server.py` declares the tools and the
safety rules, `cli_child.py` runs a command of the CLI in a child process (`python -m stepscope
<command> --json`) and cancels it, `summaries.py` says each result in the presenters' words.
docs/mcp.md describes the tools and their results.
"""
