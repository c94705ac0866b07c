"""The agent: runs the user's program, in the user's interpreter, with the step instrumented.

Invariant: modules here import only the standard library, torch, and each other (never the rest
of `stepscope`), and work on Python >= 3.10 with torch >= 2.1. They talk back to the capture
side through files in the run folder and JSON lines on an inherited pipe, never through the
program's stdout.
"""
