"""What the capture side and the agent agree on: the spec file and the event lines.

Stdlib only: imported on both sides of the process boundary.

The capture side writes `spec.json` into the run folder and starts
`python <this folder>/bootstrap.py <run folder>/spec.json`. The agent writes one JSON object per
line to the file descriptor named by the environment variable EVENTS_FD_ENV:
    {"event": "started", "pid": 4242, "rank": null}  # rank: set in a distributed capture
    {"event": "step", "index": 3, "phase": "warmup"}     # before each step begins
    {"event": "window-complete", "active_steps": 5}
    {"event": "failed", "reason": "...", "exit": 3}       # the program raised / ended too early
and exits with one of the EXIT_* codes below.

In a distributed capture (`--nproc N`) the capture side starts one agent per rank, each with its
own events pipe and RANK_ENV set to its rank. Every rank reads the same spec.json but writes only
files of its own (`rank_file_name`): trace-rank1.json, scenario-rank1.json, files-rank1.json, so
no two processes ever write the same path.
"""

from __future__ import annotations

EVENTS_FD_ENV = "STEPSCOPE_EVENTS_FD"
RUN_ENV = "STEPSCOPE_RUN"  # set to "1" in the program's environment
RANK_ENV = "STEPSCOPE_RANK"  # this agent's rank, set only in a distributed capture

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


def rank_file_name(name: str, rank: int | None) -> str:
    """The run-folder file `name` as rank `rank` writes it: "trace.json" -> "trace-rank1.json".

    `rank` None (a single-process capture) keeps the name. The analysis side reads the rank back
    from the `-rank<N>` suffix (analysis/ranks.py).
    """
    if rank is None:
        return name
    stem, dot, ext = name.partition(".")
    return f"{stem}-rank{rank}{dot}{ext}"
