"""Thresholds of the findings, with defaults, and their configuration in pyproject.toml.

```toml
[tool.stepscope.findings]
dominant-op-share = 0.7                      # any field of `Thresholds`, '-' or '_'
batch-read-patterns = ["read_batch*", "ss:*:next", "my_loader*"]
```

Which pyproject.toml applies, and reading it, is `stepscope.config`'s (shared with the static
rules). Invariants: `load_thresholds` never raises for a bad file or value; it returns the defaults
for what it cannot use and a one-line reason per problem, the file's own problems included.
Patterns are shell-style (`fnmatch`), matched case-insensitively against whole event names.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Mapping

from ...config import FINDINGS_KEY, read_table

#: Names of the events that read a batch, by default. Stepscope's own loop-header region, the
#: DataLoader's own event and its Python frame (with stacks), and common hand-written labels.
DEFAULT_BATCH_READ_PATTERNS: tuple[str, ...] = (
    "ss:*:next",
    "enumerate(DataLoader)*",
    "*DataLoader*.__next__",
    "*torch/utils/data/dataloader.py(*): __next__",
    "read_batch*", "lecture_batch*", "load_batch*", "fetch_batch*", "get_batch*", "next_batch*",
    "data", "batch", "data_loading", "dataloader", "input", "inputs",
)


@dataclass(frozen=True)
class Thresholds:
    # -- unsteady-window
    #: fewer active steps than this cannot show a distribution
    min_active_steps: int = 3
    #: (slowest - fastest) / median step above this, the first active step left out: not steady
    max_step_spread: float = 0.5
    #: ... and (slowest - fastest) at least this many ms: below it, jitter of the machine, not a pattern
    unsteady_min_range_ms: float = 0.25
    # -- profiled-faster
    #: profiled / unprofiled ms/step (medians, same process) below this: the window is not the loop's pace ...
    profiled_faster_ratio: float = 0.8
    #: ... and the same for the means (a median of alternating step times alone can mislead)
    profiled_faster_mean_ratio: float = 0.9
    # -- startup-cost
    #: a start-up step this many times the window's ms/step ...
    startup_ratio: float = 2.0
    #: ... and at least this many ms longer than it, is a start-up cost worth its own look
    startup_min_extra_ms: float = 50.0
    # -- input-bound
    #: GPU runs: the GPU idles while the batch is read for at least this share of the step
    input_gpu_idle_share: float = 0.2
    #: CPU-only runs: the batch read takes at least this share of the step
    input_cpu_share: float = 0.5
    #: event names that read a batch (fnmatch, case-insensitive); used when the report is built
    batch_read_patterns: tuple[str, ...] = DEFAULT_BATCH_READ_PATTERNS
    # -- host-bound
    #: the host's own work (outside the model's training work, launches, waits and the batch read) holds
    #: at least this share of the step — with GPU events, while the GPU is idle
    host_bound_share: float = 0.5
    # -- repeated-copy
    #: a copy group must appear in at least this share of the active steps
    repeated_copy_step_share: float = 1.0
    # -- small-launches
    #: at least this many kernels per step ...
    small_launches_min_kernels: int = 64
    #: ... with a median kernel time at most this (µs) ...
    small_kernel_us: float = 20.0
    #: ... while the GPU is busy at most this share of the step
    small_launches_max_gpu_busy: float = 0.5
    # -- dominant-op
    #: one operator's time (CPU self time, or GPU time launched from it) at least this share of the step
    dominant_op_share: float = 0.6
    # -- sync-in-step
    #: the host waits on the device for at least this share of the step ...
    sync_min_share: float = 0.05
    #: ... in at least this share of the active steps
    sync_step_share: float = 0.5
    # -- rank-imbalance
    #: per step, the rank that waits most in collectives spends at least this many ms more there ...
    rank_wait_min_ms: float = 0.1
    #: ... and at least this many times the time of the rank that waits least
    rank_wait_ratio: float = 2.0


def thresholds_from_table(table: Mapping[str, Any], base: Thresholds = Thresholds()) -> tuple[Thresholds, list[str]]:
    """`base` with the values of a `[tool.stepscope.findings]` table; problems as one-line reasons."""
    known = {f.name: f for f in fields(Thresholds)}
    changes: dict[str, Any] = {}
    problems: list[str] = []
    for raw_key, value in table.items():
        key = str(raw_key).replace("-", "_")
        if key not in known:
            problems.append(f"[tool.stepscope.findings] unknown key {raw_key!r} ignored")
            continue
        default = getattr(base, key)
        if isinstance(default, tuple):
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                changes[key] = tuple(value)
                continue
        elif isinstance(default, bool) is False and isinstance(value, (int, float)) and not isinstance(value, bool):
            if isinstance(default, int) and not isinstance(default, float):
                if float(value).is_integer() and value >= 0:
                    changes[key] = int(value)
                    continue
            elif value >= 0:
                changes[key] = float(value)
                continue
        problems.append(f"[tool.stepscope.findings] {raw_key} = {value!r} is not a valid value: default kept")
    return replace(base, **changes), problems


def load_thresholds(start: Path | None, within: Path | None = None) -> tuple[Thresholds, list[str]]:
    """Thresholds from `[tool.stepscope.findings]` of the pyproject.toml that applies to `start` (a
    run's step file, or a folder), not above `within` (the workspace root); else the defaults.

    Which file applies is `stepscope.config`'s rule, the same as for the static rules."""
    if start is None:
        return Thresholds(), []
    table = read_table(Path(start), within)
    findings, problems = table.subtable(FINDINGS_KEY)
    thresholds, value_problems = thresholds_from_table(findings)
    return thresholds, [*table.warnings, *problems, *(f"{table.origin}: {p}" for p in value_problems)]
