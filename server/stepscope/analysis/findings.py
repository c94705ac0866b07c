"""Findings: from the report to an observation, a hypothesis and the next check (guide §9).

`find(report) -> list[dict]` is the single entry point; each finding has the contract's fields
(`kind, file, line, observation, hypothesis, next_check`). A finding never claims a speed-up.
"""

from __future__ import annotations


def find(report: dict) -> list[dict]:
    return []
