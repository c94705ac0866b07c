"""Which step the figures are of, and whose code its time runs in.

`define_step(scenario, file_table)` (the report's `step_definition`): the loop or the function whose
iterations or calls are the steps, from the run's scenario record: a loop's step is one iteration;
a step function's is one call, or, when the program steps an optimizer, one optimizer step with the
calls it held (gradient accumulation: agent/optimizer_steps.py), with how many calls and optimizer
steps the active steps held on average; the code that called the step function (its package, or
None for the workspace); the installed package whose module holds the step, if any.

`time_split(raw, definition, per)` (the report's `time_split`): the window's time by owner
(ownership.split_time), its rest named by who runs the step: the package that calls the step
function (Lightning's loop around `training_step`), the package whose loop is the step, or the
workspace (your own loop between its lines). Parts, in this order: your lines (with their
backward), your code between them, then the packages' parts by time, then what no owner is known
for. They add up to the basis (the mean step, or the window without steps).

Pure functions of records; nothing here reads a trace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .labels import FileTable


def define_step(scenario: dict[str, Any] | None, file_table: FileTable | None) -> dict[str, Any] | None:
    """The report's `step_definition`, or None for a trace without a scenario's step."""
    step = (scenario or {}).get("step")
    if not isinstance(step, dict) or not step.get("file"):
        return None
    observed = (scenario or {}).get("observed") or {}
    function = step.get("function") if step.get("kind") == "function" else None
    packages = file_table.package_files() if file_table is not None else {}
    file = str(step["file"])
    definition: dict[str, Any] = {
        "kind": "function" if function else "loop", "file": file,
        "line": step.get("line") if isinstance(step.get("line"), int) else None, "function": function,
        "unit": "iteration" if not function else "call", "unit_reason": None,
        "calls_per_step": None, "optimizer_steps_per_step": None, "caller": None,
        "package": packages.get(file) or packages.get(str(Path(file).resolve())),
    }
    unit = observed.get("step_unit")
    if function and isinstance(unit, dict):
        steps = unit.get("active_steps") or 0
        definition["unit"] = "optimizer step" if unit.get("unit") == "optimizer step" else "call"
        definition["unit_reason"] = unit.get("reason")
        if steps:
            definition["calls_per_step"] = round(float(unit.get("calls") or 0) / steps, 4)
            definition["optimizer_steps_per_step"] = round(float(unit.get("optimizer_steps") or 0) / steps, 4)
    caller = observed.get("step_caller")
    if function and isinstance(caller, dict):
        definition["caller"] = {"package": caller.get("package"), "module": caller.get("module")}
    return definition


def time_split(raw: dict[str, Any] | None, definition: dict[str, Any] | None, per: str) -> dict[str, Any] | None:
    """The report's `time_split` from attribution's figures (`raw`, ownership.split_time) and the
    step's definition; None without either."""
    if raw is None or definition is None:
        return None
    parts: list[dict[str, Any]] = [{"owner": "you", "package": None, "role": "lines", "ms": raw["user_ms"],
                                    "regions": []}]
    owner, package, role = _rest_owner(definition)
    packaged = [{"owner": "package", **p} for p in raw["parts"]]
    rest = {"owner": owner, "package": package, "role": role, "ms": raw["rest_ms"], "regions": []}
    if owner == "you":
        parts.append(rest)
    else:
        packaged.append(rest)
    packaged.sort(key=lambda p: (p["owner"] == "unknown", -p["ms"]))
    parts.extend(packaged)
    return {"per": per, "basis_ms": raw["window_ms"], "parts": [p for p in parts if p["ms"] > 0 or p["role"] == "lines"]}


def _rest_owner(definition: dict[str, Any]) -> tuple[str, str | None, str]:
    """Who runs the step's time that is no line's and no known region's: (owner, package, role)."""
    if definition["kind"] == "loop":
        package = definition.get("package")
        return ("package", package, "loop") if package else ("you", None, "loop")
    caller = definition.get("caller")
    if caller is None:
        return "unknown", None, "unknown"
    if caller.get("package"):
        return "package", str(caller["package"]), "caller"
    return "you", None, "loop"
