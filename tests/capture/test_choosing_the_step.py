"""Choosing the step: `--function` names a function or method of the script or of any workspace module
(`module:qualname` or `path.py:qualname` to say where), and exit 6 lists the loops it saw when none
looks like a step. The resolution is read from the source; one real torch run profiles a method
defined in another module."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from ..conftest import run_stepscope
from stepscope.agent.instrument import LoopNotFound, instrument_module
from stepscope.capture.step import resolve_function, resolve_step
from stepscope.errors import NoStepError, UsageError

TRAINER = """\
    import torch
    from torch import nn


    class Trainer:
        def __init__(self):
            self.model = nn.Linear(32, 4)
            self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01)

        def step(self, x):
            loss = self.model(x).square().mean()
            loss.backward()
            self.opt.step()
            self.opt.zero_grad()


    class Evaluator:
        def step(self, x):
            return x.sum()


    def warmup(x):
        return x * 2
    """
MAIN = """\
    import torch

    from trainer.loop import Trainer

    t = Trainer()
    data = [torch.randn(16, 32) for _ in range(20)]
    i = 0
    while i < len(data):
        t.step(data[i])
        i += 1
    """


def _write(ws: Path, name: str, body: str) -> Path:
    path = ws / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(body))
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    _write(ws, "trainer/__init__.py", "")
    _write(ws, "trainer/loop.py", TRAINER)
    _write(ws, "main.py", MAIN)
    _write(ws, ".venv/lib/site.py", "def warmup():\n    pass\n")  # an environment: never searched
    return ws


def test_a_function_of_another_workspace_module_is_found_by_name(project: Path) -> None:
    found = resolve_function(project / "main.py", "warmup", project, project)
    assert (found.file, found.qualname, found.line) == ((project / "trainer" / "loop.py").resolve(), "warmup", 22)


def test_a_method_is_named_by_its_class_or_by_its_module_or_file(project: Path) -> None:
    loop = (project / "trainer" / "loop.py").resolve()
    for name in ("Trainer.step", "trainer.loop:Trainer.step", "trainer/loop.py:Trainer.step"):
        found = resolve_function(project / "main.py", name, project, project)
        assert (found.file, found.qualname, found.line) == (loop, "Trainer.step", 10), name
    assert resolve_function(project / "main.py", "trainer.loop:Evaluator.step", project, project).line == 18


def test_a_name_several_functions_have_is_refused_with_each_of_them_listed(project: Path) -> None:
    with pytest.raises(NoStepError) as e:
        resolve_function(project / "main.py", "step", project, project)
    assert e.value.exit_code == 6
    assert "trainer/loop.py:Trainer.step (line 10), trainer/loop.py:Evaluator.step (line 18)" in str(e.value)
    assert "module:qualname or path.py:qualname" in str(e.value)


def test_a_function_or_module_that_is_not_there_says_where_it_looked(project: Path) -> None:
    with pytest.raises(NoStepError, match=r"no function named 'nope' in main.py or the workspace's modules"):
        resolve_function(project / "main.py", "nope", project, project)
    with pytest.raises(NoStepError, match=r"no module 'trainer.gone'"):
        resolve_function(project / "main.py", "trainer.gone:step", project, project)
    with pytest.raises(NoStepError, match=r"no function named 'Trainer.nope' in trainer/loop.py"):
        resolve_function(project / "main.py", "trainer/loop.py:Trainer.nope", project, project)
    with pytest.raises(UsageError, match="give a function's name"):
        resolve_function(project / "main.py", "trainer.loop:", project, project)


def test_no_step_loop_lists_the_loops_it_saw_with_their_lines(tmp_path: Path) -> None:
    script = _write(tmp_path, "tool.py", """\
        def main(items):
            for item in items:
                print(item)
            n = 0
            while n < 3:
                n += 1
        """)
    with pytest.raises(NoStepError) as e:
        resolve_step(script, None)
    assert e.value.exit_code == 6 and e.value.kind == "no-step"
    assert "loops seen: line 2 (for loop in main()); line 5 (while loop in main()); choose one with --line" \
        in str(e.value)
    assert e.value.candidates == ((2, "for loop in main()"), (5, "while loop in main()"))
    empty = _write(tmp_path, "empty.py", "x = 1\n")
    with pytest.raises(NoStepError, match="no loop in empty.py; for a step that is a function, name it with --function"):
        resolve_step(empty, None)


def test_the_cli_says_the_loops_it_saw_on_exit_6(tmp_path: Path) -> None:
    _write(tmp_path, "tool.py", "for item in [1, 2]:\n    print(item)\n")
    r = run_stepscope("profile", "tool.py", cwd=tmp_path)
    assert r.returncode == 6
    assert r.stderr.strip().splitlines()[-1] == (
        "stepscope: no loop in tool.py looks like a training or inference step; loops seen: line 1 (for loop); "
        "choose one with --line (or a step function with --function)")


def test_the_agent_instruments_the_method_its_qualified_name_and_line_name() -> None:
    import ast

    tree = ast.parse(textwrap.dedent(TRAINER))
    instrument_module(tree, "f1", step_line=18, step_function="Evaluator.step")
    text = ast.unparse(tree)
    evaluator = text[text.index("class Evaluator"):]
    trainer = text[text.index("class Trainer"):text.index("class Evaluator")]
    assert "step_boundary()" in evaluator and "step_boundary()" not in trainer
    with pytest.raises(LoopNotFound, match="no function named 'Trainer.step' at line 18"):
        instrument_module(ast.parse(textwrap.dedent(TRAINER)), "f1", step_line=18, step_function="Trainer.step")


@pytest.mark.torch
def test_a_method_defined_in_another_module_is_profiled_as_the_step(project: Path) -> None:
    r = run_stepscope("profile", "main.py", "--function", "trainer.loop:Trainer.step", "--json", "--wait", "0",
                      "--warmup", "1", "--active", "3", cwd=project)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert len(report["steps"]) == 3
    lines = {(Path(x["file"]).relative_to(project).as_posix(), x["line"]) for x in report["lines"]}
    assert {("trainer/loop.py", n) for n in (11, 12, 13, 14)} <= lines
    step = report["scenario"]["step"]
    assert step["kind"] == "function" and step["function"] == "Trainer.step" and step["line"] == 10
    assert Path(step["file"]).name == "loop.py"
    assert report["scenario"]["program"]["entry"]["path"].endswith("main.py")  # the program still starts there
    r = run_stepscope("profile", "main.py", "--function", "step", cwd=project)
    assert r.returncode == 6 and "several functions match 'step'" in r.stderr
