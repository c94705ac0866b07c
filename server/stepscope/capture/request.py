"""What to capture: the step, the program, the window and the options, validated up front."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError


@dataclass(frozen=True)
class Schedule:
    wait: int = 1
    warmup: int = 2
    active: int = 5
    repeat: int = 1

    def __post_init__(self) -> None:
        for name in ("wait", "warmup", "active", "repeat"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise UsageError(f"--{name} must be a whole number >= 0 (got {value!r})")
        if self.active < 1:
            raise UsageError("--active must be at least 1")
        if self.repeat < 1:
            raise UsageError("--repeat must be at least 1")

    def as_dict(self) -> dict[str, int]:
        return {"wait": self.wait, "warmup": self.warmup, "active": self.active, "repeat": self.repeat}

    def warnings(self) -> list[str]:
        out = []
        if self.active < 3:
            out.append(f"only {self.active} active step(s): enough to show the mechanism, not a distribution "
                       "(use --active 5 or more)")
        if self.warmup == 0:
            out.append("no warm-up step: the first active step may include one-time costs")
        return out


@dataclass(frozen=True)
class CaptureRequest:
    """Everything a capture needs. Paths are absolute."""

    root: Path                       # workspace root: .stepscope/ lives here, file ids are relative to it
    target_file: Path                # the file that holds the step loop
    target_line: int | None          # 1-based line of the loop header (None with target_function)
    python: str                      # interpreter that runs the program (must have torch)
    target_function: str | None = None  # each call of this function is a step
    depth: int = 2                    # workspace call depth that gets line regions
    line_regions: bool = True         # False: only step boundaries (to measure the regions' overhead)
    bound_regions: bool = True        # False: split every function into lines, whatever the regions cost
    entry_script: Path | None = None  # the program's start, when not target_file
    entry_module: str | None = None   # `-m MODULE`
    args: tuple[str, ...] = ()
    cwd: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    schedule: Schedule = Schedule()
    cpu_only: bool = False
    shapes: bool = False
    stack: bool = False
    memory: bool = False
    run_to_end: bool = False
    timeout_s: float | None = None
    note: str | None = None
    out: Path | None = None
    nproc: int = 1                    # > 1: one process per rank, started as torchrun would (launch.py)

    def __post_init__(self) -> None:
        check_nproc(self.nproc)


def check_nproc(nproc: object) -> int:
    """`nproc`, when it is a usable number of processes (ranks); else a UsageError."""
    if not isinstance(nproc, int) or isinstance(nproc, bool) or nproc < 1:
        raise UsageError(f"--nproc must be a whole number >= 1 (got {nproc!r})")
    return nproc
