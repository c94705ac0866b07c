"""The agent: runs the user's program, in the user's interpreter, with the step instrumented.

Invariant: modules here import only the standard library, torch, and each other (never the rest
of `stepscope`), and work on Python >= 3.10 with torch >= 2.1. bootstrap.py loads this folder as a
package of its own, with nothing else of Stepscope importable, so the invariant holds by
construction. They talk back to the capture side through files in the run folder and events
(protocol.py, the one module both sides share), never through the program's stdout.

Modules: protocol (the run contract), main (read the spec, run, classify, write the records),
steps (the step clock every mode shares), profiling (the profile mode's recorder), instrument and
program (the rewrite and running the program), probe, scenario, compiled, guard (what the run was).
"""
