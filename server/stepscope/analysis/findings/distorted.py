"""Findings whose evidence the profiler itself distorts say so, and point at the check without it.

The profiler costs host time per recorded event. Where a finding's evidence is host time or the
host's pace — the host waiting on the device (sync-in-step), launch overhead setting the step's
time (small-launches), the host reading the batch while the device waits (input-bound) — a slower
host changes the evidence itself: waits shrink or vanish because the device now finishes first,
launch gaps grow. When the report measured the step without the profiler (`distortion`), those
findings carry the figure and the measure command; when it did not, they say the profiler's cost
was not measured. A trace Stepscope did not record (no step in its scenario) is left as it is.

A pure function over the findings and the report, applied last by `find`.
"""

from __future__ import annotations

import os

DISTORTED_KINDS = ("sync-in-step", "small-launches", "input-bound")
NOTICEABLE = 1.05  # below this the profiled and unprofiled steps agree within the usual noise


def measure_command(report: dict) -> str:
    """`stepscope measure train.py --line 42` for the report's step (relative to where it ran)."""
    scenario = report.get("scenario") or {}
    step = scenario.get("step") or {}
    script = step.get("file")
    if not script:
        return "stepscope measure SCRIPT --line LINE"
    cwd = (scenario.get("program") or {}).get("cwd")
    if cwd and os.path.isabs(script) and os.path.commonpath([cwd, script]) == os.path.normpath(cwd):
        script = os.path.relpath(script, cwd)
    where = f"--function {step['function']}" if step.get("function") else f"--line {step.get('line')}"
    return f"stepscope measure {script} {where}"


def mark_distorted(findings: list[dict], report: dict) -> list[dict]:
    if not ((report.get("scenario") or {}).get("step") or {}).get("file"):
        return findings  # a trace Stepscope did not record: no step to measure, nothing measured
    d = report.get("distortion")
    unprofiled = report.get("unprofiled") or {}
    command = measure_command(report)
    for f in findings:
        if f.get("kind") not in DISTORTED_KINDS:
            continue
        if isinstance(d, (int, float)) and d >= NOTICEABLE:
            f["observation"] += (
                f" The profiler itself made this step {d:.2f}x slower ({report['ms_per_step']:.2f} ms profiled, "
                f"{unprofiled['ms_per_step']:.2f} ms without it, same process): it slows host work most, so this "
                "evidence is distorted.")
        elif d is None:
            f["observation"] += (" The step was not timed without the profiler, so how much the profiler distorts "
                                 "this host-side evidence is unknown.")
        f["next_check"] += f" Check the step without the profiler: `{command}`."
        f["figures"]["distortion"] = d
    return findings
