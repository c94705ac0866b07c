"""Sub-commands of `stepscope`. Each module: `add_arguments(parser)` and `run(args) -> int`.

Command modules import their heavy parts inside `run`, so building the parser stays cheap.
"""
