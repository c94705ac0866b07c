"""Stepscope: where does the time of a PyTorch step go, line by line.

This package must stay importable without torch and without the LSP stack: the language server,
`stepscope check` and `stepscope analyze` run on machines that have neither. See
docs/architecture.md for what each sub-package may import.
"""

__version__ = "0.1.0"
