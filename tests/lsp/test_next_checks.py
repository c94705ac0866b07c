"""A finding's next check as an editor action: which checks a finding offers, and the step they run
(the run's own, where the editor can start the program as the run did; none elsewhere)."""

from __future__ import annotations

from pathlib import Path

from stepscope.lsp.next_checks import checks_of, step_target
from stepscope.lsp.runs import Run


def _run(root: Path, step: dict, entry: dict) -> Run:
    report = {"scenario": {"step": step, "program": {"entry": entry, "cwd": str(root)}}}
    return Run.of("r1", root / ".stepscope" / "runs" / "r1", root, report)


def test_an_advised_warm_up_and_a_measure_command_are_the_checks_offered():
    finding = {"kind": "profiled-faster", "figures": {"advised_warmup": 7},
               "next_check": "Profile again with `--warmup 7`; time the loop with `stepscope measure train.py --line 9`."}
    assert checks_of(finding) == [("profile", {"warmup": 7}), ("measure", {})]
    # prose alone, or a warm-up that is no count, offers nothing to run
    assert checks_of({"kind": "x", "figures": {"advised_warmup": True}, "next_check": "Read the trace."}) == []
    assert checks_of({"kind": "x", "figures": {"advised_warmup": None}, "next_check": ""}) == []


def test_the_step_is_the_runs_loop_where_its_code_is_now(tmp_path: Path):
    script = tmp_path / "train.py"
    script.write_text("...\n")
    run = _run(tmp_path, {"file": str(script), "line": 12, "function": None}, {"kind": "script", "path": str(script)})
    assert step_target(run) == {"uri": script.as_uri(), "position": {"line": 11, "character": 0}}
    assert step_target(run, lambda line0: line0 + 2)["position"] == {"line": 13, "character": 0}  # moved down
    assert step_target(run, lambda line0: None) is None  # its code changed: nothing to point at


def test_a_step_function_is_named_as_the_lens_names_it(tmp_path: Path):
    script = tmp_path / "lit.py"
    script.write_text("...\n")
    run = _run(tmp_path, {"file": str(script), "line": 30, "function": "LitModel.training_step"},
               {"kind": "script", "path": str(script)})
    assert step_target(run) == {"uri": script.as_uri(), "position": {"line": 0, "character": 0},
                                "function": "LitModel.training_step"}


def test_no_action_where_the_editor_could_not_start_the_program_as_the_run_did(tmp_path: Path):
    script, main = tmp_path / "train.py", tmp_path / "main.py"
    loop = {"file": str(script), "line": 12, "function": None}
    assert step_target(_run(tmp_path, loop, {"kind": "module", "name": "pkg.train"})) is None
    assert step_target(_run(tmp_path, loop, {"kind": "script", "path": str(main)})) is None  # started elsewhere
    outside = {"file": "/elsewhere/train.py", "line": 12, "function": None}
    assert step_target(_run(tmp_path, outside, {"kind": "script", "path": "/elsewhere/train.py"})) is None
    assert step_target(Run.of("r2", tmp_path, tmp_path, {})) is None  # a trace from elsewhere
