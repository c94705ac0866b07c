"""A run finding's next check as code actions, beside its diagnostic: "Measure this step without the
profiler" where the next check times the step outside the profiler, and "Profile again with warm-up
N" where it advises a longer warm-up. Each runs the editor's own Profile / Measure This Step on the
run's step, as the lenses do, so the user confirms it and sees its progress as for any run.

Invariants:
- Offered only on a diagnostic of a run's finding at the cursor, for a run Stepscope recorded from a
  script in the workspace (its scenario names the step and the program started from that file); a
  trace from elsewhere, a program started as a module or from another file offers none: the editor's
  commands could not start it the same way.
- The step is the run's, not the cursor's; its loop line is where that code is now.
- A warm-up re-profile changes that one setting for that one run (`warmup` in the command's
  argument); the settings stay as they are.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from .runs import in_workspace, same_uri

if TYPE_CHECKING:
    from .runs import Run
    from .server import StepscopeServer

MEASURE_TITLE = "Measure this step without the profiler (the finding's next check)"
WARMUP_TITLE = "Profile again with warm-up {n} (the finding's next check)"


def checks_of(finding: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The next checks of `finding` the editor can run, as (`measure` | `profile`, extra arguments)."""
    checks: list[tuple[str, dict[str, Any]]] = []
    warmup = (finding.get("figures") or {}).get("advised_warmup")
    if isinstance(warmup, int) and not isinstance(warmup, bool) and warmup > 0:
        checks.append(("profile", {"warmup": warmup}))
    if "`stepscope measure" in str(finding.get("next_check") or ""):
        checks.append(("measure", {}))
    return checks


def step_target(run: "Run", line_now: Any = None) -> dict[str, Any] | None:
    """The command argument that names the run's step ({uri, position, function?}), or None where the
    editor cannot start the program as the run did. `line_now(line0)`: where a 0-based line of the
    step's file is now (None: gone), for a loop step."""
    scenario = run.report.get("scenario") or {}
    step = scenario.get("step") or {}
    entry = (scenario.get("program") or {}).get("entry") or {}
    uri = in_workspace(step.get("file"), run.root)
    if uri is None or entry.get("kind") != "script" or not isinstance(entry.get("path"), str) \
            or Path(entry["path"]).resolve() != Path(step["file"]).resolve():
        return None
    if step.get("function"):
        return {"uri": uri, "position": {"line": 0, "character": 0}, "function": step["function"]}
    line = step.get("line")
    if not isinstance(line, int) or line < 1:
        return None
    now = line_now(line - 1) if line_now is not None else line - 1
    return None if now is None else {"uri": uri, "position": {"line": now, "character": 0}}


def next_check_actions(ls: "StepscopeServer", uri: str, context: types.CodeActionContext | None,
                       profile_command: str, measure_command: str) -> list[types.CodeAction]:
    """The next checks of the run's findings among the diagnostics at the cursor, as code actions."""
    if context is None:
        return []
    placed = ls.runs.placed_findings(uri, ls.roots())
    if placed is None:
        return []
    run, findings = placed
    target = None
    actions = []
    for diagnostic in context.diagnostics:
        if not str(diagnostic.source or "").startswith("stepscope run"):
            continue
        finding = next((f for now, f in findings
                        if f.get("kind") == diagnostic.code and now == diagnostic.range.start.line), None)
        checks = checks_of(finding) if finding is not None else []
        if not checks:
            continue
        if target is None:
            target = step_target(run, _line_now(ls, run, uri))
            if target is None:
                return []
        for kind, extra in checks:
            title = WARMUP_TITLE.format(n=extra["warmup"]) if kind == "profile" else MEASURE_TITLE
            actions.append(types.CodeAction(
                title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                command=types.Command(title=title, command=profile_command if kind == "profile" else measure_command,
                                      arguments=[{**target, **extra}])))
    return actions


def _line_now(ls: "StepscopeServer", run: "Run", uri: str):
    """Where a line of the run's step file is now, when that file is the document the finding is in
    (the registry follows its edits); elsewhere, the line as the run saw it."""
    step_uri = in_workspace(((run.report.get("scenario") or {}).get("step") or {}).get("file"), run.root)
    if step_uri is None or same_uri(step_uri) != same_uri(uri):
        return None
    return lambda line0: ls.runs.line_now(uri, line0, ls.roots())
