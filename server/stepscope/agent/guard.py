"""The program's own torch.profiler, made inert for the run: profilers do not nest.

Kineto records one profiling session per process. A program that profiles its own loop would
either fail to start its profiler or silently steal events from Stepscope's window, so for the
duration of the run `torch.profiler.profile` is replaced by a stand-in that accepts every call
and records nothing, and the run says so. `record_function` labels still work: they land in
Stepscope's trace.
"""

from __future__ import annotations

import sys
import traceback
from typing import Any, Callable


class _EmptyAverages(list):
    def table(self, *args: Any, **kwargs: Any) -> str:
        return "(this run was profiled by Stepscope: see its run folder)"


def install(note: Callable[[str, str], None]) -> None:
    import torch.profiler
    import torch.profiler.profiler as profiler_module

    said: set[str] = set()

    class InertProfile:
        """Stand-in for the program's own torch.profiler.profile during a Stepscope run."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            frames = [f for f in traceback.extract_stack()[:-1] if "stepscope" not in f.filename]
            where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "unknown place"
            if where not in said:
                said.add(where)
                message = (f"the program's own torch.profiler.profile at {where} is disabled for this run "
                           "(profilers do not nest); its trace is not written, Stepscope's is")
                sys.stderr.write(f"stepscope: note: {message}\n")
                note("own-profiler", where)
            self.step_num = 0

        def __enter__(self) -> "InertProfile":
            return self

        def __exit__(self, *exc: Any) -> bool:
            return False

        def start(self) -> None:
            pass

        def stop(self) -> None:
            pass

        def step(self) -> None:
            self.step_num += 1

        def export_chrome_trace(self, path: str) -> None:
            pass

        def export_stacks(self, *args: Any, **kwargs: Any) -> None:
            pass

        def key_averages(self, *args: Any, **kwargs: Any) -> _EmptyAverages:
            return _EmptyAverages()

        def events(self) -> list:
            return []

    torch.profiler.profile = InertProfile  # type: ignore[misc]
    profiler_module.profile = InertProfile  # type: ignore[misc]
