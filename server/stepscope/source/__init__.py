"""Understanding the user's source: which loops there are, and which one is the step.

Standard library only (`ast`): `stepscope check`, the language server and the capture side (which
loop `profile` instruments) read the user's source without torch.
See `stepscope.source.loops` for the contract.
"""

from .loops import (
    AmbiguousStep,
    Loop,
    NoStepFound,
    SourceSyntaxError,
    choose_step,
    find_loops,
    loop_at,
)

__all__ = [
    "AmbiguousStep",
    "Loop",
    "NoStepFound",
    "SourceSyntaxError",
    "choose_step",
    "find_loops",
    "loop_at",
]
