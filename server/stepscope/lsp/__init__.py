"""The language server (pygls). The only package that imports pygls and lsprotocol.

It never imports torch: user code runs in the agent subprocess started by `capture`.
"""
