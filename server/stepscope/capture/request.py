"""What to capture: the step, the program, how to run it, and what to record, validated up front.

The options are declared once, with their defaults, limits, flags and settings: what the agent
records in `agent/protocol.py` (`ProfileOptions`, `MeasureOptions`), how the capture side runs the
program here (`RunOptions`, `MeasureRunOptions`); `options.py` offers them as flags and editor
settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..agent.protocol import MeasureOptions, ProfileOptions, Schedule, check_options, option
from ..errors import UsageError

#: Modules that start other processes to run the program (torchrun and its predecessor): run
#: inside the agent, their workers would be left uninstrumented; they are given as the launcher.
LAUNCHER_MODULES = ("torch.distributed.run", "torch.distributed.launch")


@dataclass(frozen=True)
class RunOptions:
    """How the capture side runs the program."""

    timeout: float = option(0.0, "stop the program after this many seconds (exit 4)", flag="--timeout",
                            setting="timeout", minimum=0, unit="seconds", zero="no limit")
    nproc: int = option(1, "start N processes on this machine with torchrun (`torchrun --standalone "
                        "--nproc-per-node N`), each rank recorded apart", flag="--nproc", setting="nproc", minimum=1)
    redact: bool = option(False, "at the end of the run, write a redacted copy of each trace beside it, safe to "
                                 "share (as `stepscope redact --beside`)", flag="--redact")

    def __post_init__(self) -> None:
        check_options(self)

    @property
    def timeout_s(self) -> float | None:
        return self.timeout or None


@dataclass(frozen=True)
class MeasureRunOptions:
    """How `stepscope measure` runs and compares (the capture side's part; MeasureOptions is the
    agent's)."""

    runs: int = option(1, "processes to time the step in, one after the other (with --against: per side, "
                          "alternating; default 3 there)", flag="--runs", setting="runs", minimum=1)
    tolerance: float = option(1e-4, "largest relative difference between two runs' values (the loss, or "
                                    "--value) that still counts as the same result", flag="--tolerance",
                              setting="tolerance", minimum=0)

    def __post_init__(self) -> None:
        check_options(self)


@dataclass(frozen=True)
class CaptureRequest:
    """Everything a capture needs. Paths are absolute."""

    root: Path                       # workspace root: .stepscope/ lives here, file ids are relative to it
    target_file: Path                # the file that holds the step loop (or the step function)
    target_line: int | None          # 1-based line of the loop header, or the step function's def line
    python: str                      # interpreter that runs the program (must have torch)
    target_function: str | None = None  # each call of this function is a step (its qualified name)
    target_micro_batch: bool = False  # with target_function: each call is a step, whatever the optimizer does
    entry_script: Path | None = None  # the program's start, when not target_file
    entry_module: str | None = None   # `-m MODULE`
    args: tuple[str, ...] = ()
    cwd: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    note: str | None = None
    out: Path | None = None
    profile: ProfileOptions = field(default_factory=ProfileOptions)
    run: RunOptions = field(default_factory=RunOptions)
    launcher: tuple[str, ...] = ()  # the launcher's command (its words) that starts the ranks; () none
    measure: MeasureOptions | None = None  # set: mode "measure" (no profiler; `profile` is not used)
    step_header: str | None = None  # the loop header's text, as the scenario records the step
    env_defaults: dict[str, str] = field(default_factory=dict)  # set in the program's environment unless set

    @property
    def mode(self) -> str:
        return "profile" if self.measure is None else "measure"

    def __post_init__(self) -> None:
        check_entry_module(self.entry_module)
        if self.launcher and self.run.nproc > 1:
            raise UsageError("a launcher and nproc > 1 cannot be combined: the launcher chooses how many processes "
                             "to start")

    @property
    def launched(self) -> bool:
        """Whether a launcher starts the program's processes (`--launcher`, or torchrun for `--nproc`)."""
        return bool(self.launcher) or self.run.nproc > 1

    @property
    def schedule(self) -> Schedule:
        return self.profile.schedule


def check_entry_module(name: str | None) -> None:
    """A UsageError for a program module that is a launcher (torchrun): it is given as the launcher,
    with the script as the program."""
    if name in LAUNCHER_MODULES:
        raise UsageError(f"{name} is a launcher, not the program: give it as the launcher "
                         f"(--launcher \"python -m {name} …\") and the script as the program")


def schedule_warnings(schedule: Schedule) -> list[str]:
    out = []
    if schedule.active < 3:
        out.append(f"only {schedule.active} active step(s): enough to show the mechanism, not a distribution "
                   "(use --active 5 or more)")
    if schedule.warmup == 0:
        out.append("no warm-up step: the first active step may include one-time costs")
    return out
