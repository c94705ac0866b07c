"""Whether two measurements may be compared: the same machine, the same step, the same batch, the
same device and the same options; otherwise, in words, where they differ.

A measurement is described by two records (the `machine` and `scope` of a measure result or of a
history row):
- machine: what the agent recorded (host, cpu, devices, driver, torch and its CUDA / HIP build,
  python). A trace — and a timing — describes the machine it ran on (guide §13).
- scope: {"kind": "measure" | "profile", "script": workspace-relative path,
  "step": {"line", "function", "header", "unit", "calls_per_step"}, "args": [...], "batch_size": int | None,
  "device": "cuda" | "cpu" | ..., "warmup": int, "world_size": int (processes the step ran in:
  1 without a launcher), "launcher": str | None (the launcher's command; not compared: the same
  world under another launcher runs the same step)}; a step function's `unit` is "optimizer step"
  (its calls under gradient accumulation, `calls_per_step` on average) or "call"
  (agent/optimizer_steps.py); None for a loop or a record from before it was kept.

The step's line is not compared (an edit above the loop moves it); its header's text is, so two
different loops of one script are never compared by accident. A field unknown on either side
(None) is not a difference.
"""

from __future__ import annotations

from typing import Any

MACHINE_KEYS = ("host", "cpu", "devices", "driver", "torch", "cuda_build", "hip_build", "python")


def _differ(x: Any, y: Any) -> bool:
    return x is not None and y is not None and x != y


def _show(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(v) for v in value) + "]" if value else "none"
    return str(value)


def differences(a_machine: dict, a_scope: dict, b_machine: dict, b_scope: dict) -> list[str]:
    """Why measurement a and measurement b are not comparable; empty when they are."""
    out: list[str] = []
    machine = [f"{k} {_show(a_machine.get(k))} vs {_show(b_machine.get(k))}"
               for k in MACHINE_KEYS if _differ(a_machine.get(k), b_machine.get(k))]
    if machine:
        out.append("machine (" + "; ".join(machine) + ")")
    if _differ(a_scope.get("kind"), b_scope.get("kind")):
        out.append(f"kind of run ({a_scope['kind']} vs {b_scope['kind']})")
    if _differ(a_scope.get("script"), b_scope.get("script")):
        out.append(f"script ({a_scope['script']} vs {b_scope['script']})")
    a_step, b_step = a_scope.get("step") or {}, b_scope.get("step") or {}
    if (a_step.get("function") is None) != (b_step.get("function") is None) \
            or _differ(a_step.get("function"), b_step.get("function")):
        out.append(f"step ({_step_words(a_step)} vs {_step_words(b_step)})")
    elif _differ(a_step.get("unit"), b_step.get("unit")):
        out.append(f"step ({_step_words(a_step)} vs {_step_words(b_step)})")
    elif _differ(a_step.get("header"), b_step.get("header")):
        out.append(f"step loop ({_step_words(a_step)} vs {_step_words(b_step)})")
    if _differ(a_scope.get("args"), b_scope.get("args")):
        out.append(f"program arguments ({_show(a_scope['args'])} vs {_show(b_scope['args'])})")
    if _differ(a_scope.get("batch_size"), b_scope.get("batch_size")):
        out.append(f"batch size ({a_scope['batch_size']} vs {b_scope['batch_size']})")
    if _differ(a_scope.get("device"), b_scope.get("device")):
        out.append(f"device ({a_scope['device']} vs {b_scope['device']})")
    if _differ(a_scope.get("warmup"), b_scope.get("warmup")):
        out.append(f"warm-up passes ({a_scope['warmup']} vs {b_scope['warmup']})")
    if _differ(a_scope.get("world_size"), b_scope.get("world_size")):
        out.append(f"processes per step ({a_scope['world_size']} vs {b_scope['world_size']} ranks)")
    return out


def _step_words(step: dict) -> str:
    if step.get("function"):
        if step.get("unit") == "optimizer step":
            return f"each optimizer step of {step['function']}()"
        return f"each call of {step['function']}()"
    header = step.get("header")
    line = step.get("line")
    where = f"loop at line {line}" if line is not None else "loop"
    return f"{where} `{header}`" if header else where


def step_device(observed: dict | None) -> str | None:
    """The kind of device the step ran on ("cuda", "cpu", "mps", ...), from what the agent observed
    of it: its models' parameters, else its batch's tensors. None when neither was seen."""
    observed = observed or {}
    for model in observed.get("models") or []:
        if model.get("device"):
            return str(model["device"]).split(":")[0]
    for source in ("batch", "arguments"):
        for tensor in (observed.get(source) or {}).get("tensors") or []:
            if tensor.get("device"):
                return str(tensor["device"]).split(":")[0]
    return None


def scope_of(scenario: dict, *, kind: str, script: str | None, warmup: int | None) -> dict:
    """The scope record of a run from its scenario record (`script`: workspace-relative)."""
    step = scenario.get("step") or {}
    program = scenario.get("program") or {}
    unit = (scenario.get("observed") or {}).get("step_unit") or {}
    calls = unit.get("calls") / unit["active_steps"] if unit.get("active_steps") and unit.get("calls") else None
    distributed = scenario.get("distributed") or {}
    return {
        "kind": kind,
        "script": script,
        "step": {"line": step.get("line"), "function": step.get("function"), "header": step.get("header"),
                 "unit": unit.get("unit"), "calls_per_step": round(calls, 4) if calls is not None else None},
        "args": list(program.get("args") or []),
        "batch_size": scenario.get("batch_size"),
        "device": step_device(scenario.get("observed")),
        "warmup": warmup,
        "world_size": distributed.get("world_size") or 1,
        "launcher": distributed.get("launcher"),
    }
