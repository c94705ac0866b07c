"""What the capture side and the agent agree on: the spec file and the event lines.

Stdlib only: imported on both sides of the process boundary.

The capture side writes `spec.json` into the run folder and starts
`python <this folder>/bootstrap.py <run folder>/spec.json`. The agent writes one JSON object per
line to the file descriptor named by the environment variable EVENTS_FD_ENV:
    {"event": "started"}
    {"event": "step", "index": 3, "phase": "warmup"}     # before each step begins
    {"event": "window-complete", "active_steps": 5}
    {"event": "failed", "reason": "...", "exit": 3}       # the program raised / ended too early
and exits with one of the EXIT_* codes below.
"""

from __future__ import annotations

EVENTS_FD_ENV = "STEPSCOPE_EVENTS_FD"
RUN_ENV = "STEPSCOPE_RUN"  # set to "1" in the program's environment

# Agent exit codes (the capture side maps them to the CLI's).
EXIT_OK = 0
EXIT_PROGRAM_FAILED = 3
EXIT_REFUSED = 5
EXIT_NO_STEP = 6
EXIT_AGENT_ERROR = 70

# Label grammar (see docs/architecture.md): ss:<file-id>:<line>[:next]
LABEL_PREFIX = "ss:"


def region_label(file_id: str, line: int) -> str:
    return f"{LABEL_PREFIX}{file_id}:{line}"


def fetch_label(file_id: str, line: int) -> str:
    return f"{LABEL_PREFIX}{file_id}:{line}:next"
