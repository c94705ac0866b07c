"""The data model of static checks: diagnostics, fixes, edits, and the rule catalogue.

Coordinates everywhere: lines are 1-based, columns 0-based offsets into the line as a Python str
(code points), end exclusive. For a notebook, `cell` is the 1-based index of the code cell and
lines count from the top of that cell.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["warning", "info"]

RULES_DOC_BASE = "https://github.com/stepscope/stepscope/blob/main/docs/rules/"


@dataclass(frozen=True)
class Edit:
    """Replace the text from (line, col) to (end_line, end_col) with `new_text`."""

    line: int
    col: int
    end_line: int
    end_col: int
    new_text: str


@dataclass(frozen=True)
class Fix:
    """A quick fix: all its edits are applied together. Edits never overlap."""

    title: str
    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    severity: Severity = "warning"
    url: str = ""
    fixes: tuple[Fix, ...] = ()
    cell: int | None = None

    def to_dict(self) -> dict:
        out = {
            "code": self.code,
            "message": self.message,
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "end_line": self.end_line,
            "end_col": self.end_col,
            "severity": self.severity,
            "url": self.url,
            "fixes": [
                {"title": f.title,
                 "edits": [{"line": e.line, "col": e.col, "end_line": e.end_line,
                            "end_col": e.end_col, "new_text": e.new_text} for e in f.edits]}
                for f in self.fixes
            ],
        }
        if self.cell is not None:
            out["cell"] = self.cell
        return out


@dataclass(frozen=True)
class RuleInfo:
    code: str
    name: str
    summary: str
    severity: Severity
    default_on: bool = True
    tags: tuple[str, ...] = field(default=())

    @property
    def url(self) -> str:
        return f"{RULES_DOC_BASE}{self.code}.md"


# The catalogue. Codes are part of the public contract; a rule below 90% precision on real
# training code is off by default (`--select SS` still runs it).
RULES: dict[str, RuleInfo] = {r.code: r for r in (
    RuleInfo("SS101", "sync-in-step",
             "host-device synchronisation in every step of a training loop", "warning"),
    RuleInfo("SS102", "sync-after-every-op",
             "a synchronize after every operation inside a timed or profiled region", "warning",
             default_on=False),
    RuleInfo("SS103", "sync-in-evaluation",
             "host-device synchronisation in every batch of an evaluation or inference loop",
             "info", default_on=False),
    RuleInfo("SS201", "timing-without-sync",
             "wall-clock duration around device work with no synchronisation or events", "warning"),
    RuleInfo("SS202", "time-time-duration",
             "time.time() used for a duration (not monotonic)", "info"),
    RuleInfo("SS301", "unsafe-label",
             "profiler/NVTX label with an e-mail, a secret, a private path or input content",
             "warning"),
    RuleInfo("SS401", "costly-profiler-option",
             "record_shapes / with_stack / profile_memory turned on", "info"),
    RuleInfo("SS402", "profile-without-schedule",
             "profile() around a loop with no schedule", "warning"),
    RuleInfo("SS403", "schedule-without-warmup", "schedule(warmup=0)", "warning"),
    RuleInfo("SS404", "schedule-never-stepped",
             "a scheduled profiler around a loop that never calls prof.step()", "warning"),
    RuleInfo("SS405", "trace-overwrite",
             "trace exported to a fixed path that may already exist", "warning"),
    RuleInfo("SS406", "gpu-activities",
             "CUDA activities not checked with supported_activities(), or a CUDA program "
             "profiled with CPU-only activities", "warning", default_on=False),
    RuleInfo("SS407", "summed-profiler-rows",
             "time columns summed across profiler rows (nested events double count)", "warning"),
    RuleInfo("SS501", "constant-moved-every-step",
             "a constant tensor built and moved to the device inside the step loop", "warning"),
    RuleInfo("SS502", "iterator-in-window",
             "the data iterator created inside the profiled window", "warning"),
)}


def make_diagnostic(code: str, message: str, path: str, span: tuple[int, int, int, int],
                    fixes: tuple[Fix, ...] = ()) -> Diagnostic:
    info = RULES[code]
    line, col, end_line, end_col = span
    return Diagnostic(code=code, message=message, path=path, line=line, col=col,
                      end_line=end_line, end_col=end_col, severity=info.severity, url=info.url,
                      fixes=fixes)
