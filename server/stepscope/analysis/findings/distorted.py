"""Findings whose evidence the profiler itself distorts say so, and point at the check without it.

The profiler costs host time per recorded event. Where a finding's evidence is host time or the
host's pace — the host waiting on the device (sync-in-step), launch overhead setting the step's
time (small-launches), the host reading the batch while the device waits (input-bound), the host's
own work setting the step's pace (host-bound) — a slower
host changes the evidence itself: waits shrink or vanish because the device now finishes first,
launch gaps grow. When the report measured the step without the profiler (`distortion`), those
findings carry the figure and the measure command; when it did not, they say the profiler's cost
was not measured. A trace Stepscope did not record (no step in its scenario) is left as it is.

A pure function over the findings and the report, applied last by `find`.
"""

from __future__ import annotations

import os

from ..distortion import window_overlap

DISTORTED_KINDS = ("sync-in-step", "small-launches", "input-bound", "host-bound")
NOTICEABLE = 1.05  # below this the profiled and unprofiled steps agree within the usual noise


def _shown(path: str, cwd: str | None) -> str:
    """`path` relative to `cwd` when it lies under it (as the user would type it there)."""
    if cwd and os.path.isabs(path) and os.path.commonpath([cwd, path]) == os.path.normpath(cwd):
        return os.path.relpath(path, cwd)
    return path


def installed_module(path: str) -> str | None:
    """`transformers.trainer` for a file of an installed package (under site-packages or
    dist-packages), as `--function module:qualname` names it; None for any other file."""
    parts = path.replace("\\", "/").split("/")
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] in ("site-packages", "dist-packages"):
            names = parts[i + 1:]
            names[-1] = names[-1][:-3] if names[-1].endswith(".py") else names[-1]
            if names[-1] == "__init__":
                names.pop()
            return ".".join(names) if names and all(n.isidentifier() for n in names) else None
    return None


def measure_command(report: dict) -> str:
    """`stepscope measure train.py --line 42` for the report's step (relative to where it ran);
    a step function of another file than the program's start is named `file.py:qualname` (or
    `module:qualname` in an installed package), after the program's script (or with `-m MODULE`)."""
    scenario = report.get("scenario") or {}
    step = scenario.get("step") or {}
    script = step.get("file")
    if not script:
        return "stepscope measure SCRIPT --line LINE"
    program = scenario.get("program") or {}
    cwd = program.get("cwd")
    entry = program.get("entry") or {}
    started = entry.get("path") if entry.get("kind") == "script" else None
    module = f" -m {entry['name']}" if entry.get("kind") == "module" and entry.get("name") else ""
    if not step.get("function"):
        elsewhere = f" --entry {_shown(started, cwd)}" if started and started != script else ""
        return f"stepscope measure {_shown(script, cwd)} --line {step.get('line')}{elsewhere}{module}"
    if started and started != script:
        where = installed_module(script) or _shown(script, cwd)
        return f"stepscope measure {_shown(started, cwd)} --function {where}:{step['function']}"
    return f"stepscope measure {_shown(script, cwd)} --function {step['function']}{module}"


def measure_check(report: dict) -> str:
    """The check without the profiler, as a finding's next check says it: the command for a step
    Stepscope recorded, else the command in general (a trace from elsewhere)."""
    if ((report.get("scenario") or {}).get("step") or {}).get("file"):
        return f"time the step without the profiler: `{measure_command(report)}`"
    return ("time the step without the profiler — `stepscope measure` on this step (a profile run also reports "
            "the step timed without the profiler after its window: `unprofiled`, `distortion`)")


def mark_distorted(findings: list[dict], report: dict) -> list[dict]:
    if not ((report.get("scenario") or {}).get("step") or {}).get("file"):
        return findings  # a trace Stepscope did not record: no step to measure, nothing measured
    d = report.get("distortion")
    unprofiled = report.get("unprofiled") or {}
    command = measure_command(report)
    # step times that overlap on both sides: the ratio is their variation, not the profiler's cost
    overlap = window_overlap([s["ms"] for s in report.get("steps") or []], unprofiled) is not None
    for f in findings:
        if f.get("kind") not in DISTORTED_KINDS:
            continue
        if isinstance(d, (int, float)) and d >= NOTICEABLE and not overlap:
            f["observation"] += (
                f" The profiler itself made this step {d:.2f}x slower (ms/step, the median: {report['ms_per_step']:.2f} "
                f"ms profiled, {unprofiled['ms_per_step']:.2f} ms without it, same process): it slows host work most, "
                "so this evidence is distorted.")
        elif d is None:
            f["observation"] += (" The step was not timed without the profiler, so how much the profiler distorts "
                                 "this host-side evidence is unknown.")
        # a finding may name the check already, or the measurement of the change itself (sync-in-step)
        if command not in f["next_check"] and "`stepscope measure --against`" not in f["next_check"]:
            f["next_check"] += f" Check the step without the profiler: `{command}`."
        f["figures"]["distortion"] = d
    return findings
