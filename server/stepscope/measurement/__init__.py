"""Timed passes and what can honestly be said about them: pure functions, stdlib only.

- `stats`: one sample of passes summarised (median, IQR, p10/p90, noise), and the two kinds of
  variation of repeated processes (pass to pass, run to run).
- `compare`: a before/after ratio of medians with a bootstrap 95% interval over whole processes,
  and the verdict it supports.
- `scope`: whether two measurements may be compared at all (same machine, same step, same batch,
  same options), and in what words they differ.

The method is documented in docs/measure.md.
"""
