"""Which calls of a step function begin a step: one optimizer step, or each call; and who calls it.

With `--function`, the step is each call of the function. A framework calls a training step once
per micro-batch and steps the optimizer once every N of them (gradient accumulation: Lightning's
`accumulate_grad_batches`, the HF Trainer's `gradient_accumulation_steps`), and the step its user
means is the optimizer step. `StepUnit` counts the program's optimizer steps (torch's global step
hooks, torch >= 2.0; an optimizer stepped through another's `step`, like Accelerate's wrapper around
the torch optimizer, counts once) and says at each call whether it begins a step:
- unit "optimizer step" (an optimizer exists when the function is first called, that call computes
  gradients, and the user did not ask for each call, `--micro-batch`): a call begins a step when an
  optimizer step completed
  since the call that began the step before; the first call begins step 0. A step thus holds the N
  calls, the optimizer step that ends them, and what the program does until the next call.
- unit "call": every call begins a step (no optimizer, a call made without gradients: an evaluation
  or inference step, under `torch.no_grad` or inference mode, or `--micro-batch`). A program that keeps
  calling the function without stepping an optimizer (an evaluation step in a training program)
  switches to it after `LIMIT` calls, and says so (`note`).
Each step's calls and optimizer steps are counted (`record`), so the report says what a step held.

`describe_caller` names the code that called the step function: the framework whose loop it is
(`lightning`, `transformers`), or the workspace.

Stdlib + torch only (the user's interpreter).
"""

from __future__ import annotations

import os
from typing import Any, Callable

#: calls without an optimizer step after which a step function's unit becomes the call
LIMIT = 128
#: modules that only pass a call on (decorators, nn.Module.__call__): the caller is above them
_PASS_THROUGH = ("torch", "functools", "contextlib", "typing")


def _computes_gradients() -> bool:
    """Whether autograd records here (not under `torch.no_grad` nor in inference mode)."""
    import torch

    return torch.is_grad_enabled() and not torch.is_inference_mode_enabled()


def _has_optimizer() -> bool:
    """Whether the program holds a torch optimizer now (a scan of the objects the collector tracks)."""
    import gc

    import torch

    optimizer = torch.optim.Optimizer
    # by the type itself: `isinstance` would ask proxies and lazy modules for their `__class__`
    return any(issubclass(type(o), optimizer) for o in gc.get_objects())


class StepUnit:
    def __init__(self, *, micro_batch: bool) -> None:
        self.micro_batch = micro_batch
        self.unit: str | None = None  # decided at the first call
        self.reason = ""
        self.note: str | None = None
        self.calls: list[int] = []  # per step begun: calls of the step function in it
        self.optimizer_steps: list[int] = []  # per step begun: optimizer steps completed in it
        self._stepping: list[int] = []  # ids of the optimizers whose step runs now, outermost first
        self._handles: list[Any] = []

    # -- torch's hooks ---------------------------------------------------------------------------
    def install(self) -> None:
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

        self._handles = [register_optimizer_step_pre_hook(self._pre), register_optimizer_step_post_hook(self._post)]

    def uninstall(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _pre(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        key = id(optimizer)
        if key in self._stepping:  # a step of it that raised left its entry: drop it
            del self._stepping[self._stepping.index(key):]
        self._stepping.append(key)

    def _post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        key = id(optimizer)
        if key in self._stepping:
            del self._stepping[self._stepping.index(key):]
        if not self._stepping and self.optimizer_steps:  # the outermost step completed
            self.optimizer_steps[-1] += 1

    # -- the clock's question --------------------------------------------------------------------
    def begins_step(self) -> bool:
        """A call of the step function is about to run: whether it begins a step."""
        if self.unit is None:
            if self.micro_batch:
                self.unit, self.reason = "call", "asked (--micro-batch)"
            elif not _computes_gradients():
                self.unit, self.reason = "call", "called without gradients"
            elif _has_optimizer():
                self.unit, self.reason = "optimizer step", "the program steps an optimizer"
            else:
                self.unit, self.reason = "call", "no optimizer"
        elif self.unit == "optimizer step" and not self.optimizer_steps[-1]:
            if self.calls[-1] < LIMIT:
                self.calls[-1] += 1
                return False
            self.unit, self.reason = "call", f"no optimizer step in {LIMIT} calls"
            self.note = (f"the program called the step function {LIMIT} times without stepping an optimizer: from "
                         "there on each call is a step (the first step held those calls)")
        self.calls.append(1)
        self.optimizer_steps.append(0)
        return True

    def record(self, phases: Callable[[int], str]) -> dict[str, Any] | None:
        """What the steps held, for the scenario's `observed["step_unit"]`: the unit, why, and the
        calls and optimizer steps of the active steps (`phases(i)`: the phase of step i)."""
        if self.unit is None:
            return None
        active = [i for i in range(len(self.calls)) if phases(i) == "active"]
        return {"unit": self.unit, "reason": self.reason, "active_steps": len(active),
                "calls": sum(self.calls[i] for i in active),
                "optimizer_steps": sum(self.optimizer_steps[i] for i in active)}


def describe_caller(frame: Any, in_workspace: Callable[[str], bool]) -> dict[str, Any] | None:
    """The code that called the step function whose frame is `frame`: its module, file and package
    (None for a workspace file: the program's own loop). Frames of modules that only pass a call on
    (decorators, `nn.Module.__call__`) are skipped."""
    caller = frame.f_back if frame is not None else None
    while caller is not None:
        module = str(caller.f_globals.get("__name__") or "")
        if module.split(".")[0] not in _PASS_THROUGH:
            break
        caller = caller.f_back
    if caller is None:
        return None
    file = os.path.realpath(caller.f_code.co_filename) if not caller.f_code.co_filename.startswith("<") else None
    workspace = bool(file) and in_workspace(file)
    module = str(caller.f_globals.get("__name__") or "")
    return {"module": module, "file": file, "function": caller.f_code.co_name,
            "package": None if workspace or module in ("", "__main__") else module.split(".")[0]}
