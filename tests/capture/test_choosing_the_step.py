"""Choosing the step: `--function` names a function or method of the script or of any workspace module
(`module:qualname` or `path.py:qualname` to say where); without a flag, the loop or the one function
that is clearly the step, else exit 6 with every candidate and the flag that names it; `--line` in a
function but in no loop names that function. The resolution is read from the source; real torch
runs profile a method defined in another module, and a file's one step function."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from ..conftest import run_stepscope
from stepscope.agent.instrument import LoopNotFound, instrument_module
from stepscope.capture.step import default_step, resolve_function
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


def test_no_step_lists_the_loops_it_saw_with_their_flags(tmp_path: Path) -> None:
    script = _write(tmp_path, "tool.py", """\
        def main(items):
            for item in items:
                print(item)
            n = 0
            while n < 3:
                n += 1
        """)
    with pytest.raises(NoStepError) as e:
        default_step(script)
    assert e.value.exit_code == 6 and e.value.kind == "no-step"
    assert ("loops seen: --line 2 (for loop in main()); --line 5 (while loop in main()); choose one, or name the "
            "step function with --function") in str(e.value)
    assert e.value.candidates == ((2, "for loop in main()", "--line 2"), (5, "while loop in main()", "--line 5"))
    r = run_stepscope("profile", "tool.py", cwd=tmp_path)
    assert r.returncode == 6 and r.stderr.strip().splitlines()[-1] == f"stepscope: {e.value}"
    empty = _write(tmp_path, "empty.py", "x = 1\n")
    with pytest.raises(NoStepError, match="no loop in empty.py, and no function that looks like a training or "
                                          "inference step; name the step function with --function"):
        default_step(empty)


LIT = """\
    import torch
    from torch import nn

    from minitrainer import Trainer


    class LitModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Linear(32, 4)

        def training_step(self, batch):
            out = self.net(batch)
            loss = out.square().mean()
            return loss

        def validation_step(self, batch):
            return self.net(batch).sum()


    Trainer(steps=12).fit(LitModel())
    """
# What a framework does with a LightningModule, in a module of the workspace: the loop is not in the
# file the user profiles.
MINITRAINER = """\
    import torch


    class Trainer:
        def __init__(self, steps):
            self.steps = steps

        def fit(self, module):
            opt = torch.optim.SGD(module.parameters(), lr=0.01)
            for _ in range(self.steps):
                loss = module.training_step(torch.randn(16, 32))
                loss.backward()
                opt.step()
                opt.zero_grad()
    """


def test_a_file_without_a_loop_whose_one_step_function_is_clear_gets_it(tmp_path: Path) -> None:
    script = _write(tmp_path, "train.py", LIT)
    chosen = default_step(script)
    assert chosen.loop_line is None and chosen.reason == "named training_step"
    assert (chosen.function.file, chosen.function.qualname, chosen.function.line) == (script.resolve(),
                                                                                       "LitModel.training_step", 12)


def test_several_possible_steps_are_listed_with_the_flag_that_names_each(tmp_path: Path) -> None:
    _write(tmp_path, "train.py", LIT.replace("        def validation_step", "        def train_step"))
    r = run_stepscope("profile", "train.py", cwd=tmp_path)
    assert r.returncode == 6
    assert r.stderr.strip().splitlines()[-1] == (
        "stepscope: more than one step is possible in train.py, choose one: "
        "--function LitModel.training_step (line 12: named training_step); "
        "--function LitModel.train_step (line 17: named train_step)")
    r = run_stepscope("measure", "train.py", cwd=tmp_path)
    assert r.returncode == 6 and "--function LitModel.train_step (line 17: named train_step)" in r.stderr


ENGINE = """\
    class Engine:
        def __init__(self, model, opt, data):
            self.model, self.opt, self.data = model, opt, data

        def run(self):
            for x in self.data:
                self.model(x).sum().backward()
                self.opt.step()
    """


def test_a_trainers_loop_in_a_module_the_file_imports_is_listed_with_the_command_that_profiles_it(
        tmp_path: Path) -> None:
    _write(tmp_path, "pkg/__init__.py", "")
    _write(tmp_path, "pkg/engine.py", ENGINE)
    _write(tmp_path, "run.py", "from pkg.engine import Engine\n\nEngine(model, opt, data).run()\n")
    r = run_stepscope("profile", "run.py", cwd=tmp_path)
    assert r.returncode == 6
    assert r.stderr.strip().splitlines()[-1] == (
        "stepscope: no loop or function in run.py looks like a training or inference step; in the workspace modules "
        "it imports: pkg/engine.py --line 6 --entry run.py (for loop in Engine.run() that calls backward, steps an "
        "optimizer, calls a model)")
    # beside a loop of the file that only runs a model (an evaluation), neither is chosen
    _write(tmp_path, "run.py", "from pkg.engine import Engine\n\nEngine(model, opt, data).run()\n"
                               "for x in test_data:\n    model(x)\n")
    with pytest.raises(NoStepError) as e:
        default_step(tmp_path / "run.py", tmp_path, tmp_path)
    assert e.value.kind == "ambiguous" and [c[2] for c in e.value.candidates] == [
        "--line 4", "pkg/engine.py --line 6 --entry run.py"]


def test_a_line_in_a_function_but_in_no_loop_names_the_function_to_profile(tmp_path: Path) -> None:
    _write(tmp_path, "train.py", LIT)
    r = run_stepscope("profile", "train.py", "--line", "14", cwd=tmp_path)
    assert r.returncode == 6
    assert r.stderr.strip().splitlines()[-1] == (
        "stepscope: line 14 of train.py is in LitModel.training_step(), not inside a for/while loop; to make each "
        "call of it the step: --function LitModel.training_step")
    r = run_stepscope("profile", "train.py", "--line", "21", cwd=tmp_path)  # module level
    assert r.returncode == 6
    assert r.stderr.strip().splitlines()[-1] == "stepscope: line 21 of train.py is not inside a for/while loop"


@pytest.mark.torch
def test_the_one_step_function_of_a_file_without_a_loop_is_profiled_and_said(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    _write(tmp_path, "minitrainer.py", MINITRAINER)
    _write(tmp_path, "train.py", LIT)
    r = run_stepscope("profile", "train.py", "--json", "--wait", "0", "--warmup", "1", "--active", "3",
                      cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert ("stepscope: note: no loop of train.py is a step: the step is each call of LitModel.training_step "
            "(named training_step); --line or --function chooses another") in r.stderr
    report = json.loads(r.stdout)
    step = report["scenario"]["step"]
    assert (step["kind"], step["function"], step["line"]) == ("function", "LitModel.training_step", 12)
    assert len(report["steps"]) == 3
    assert {13, 14, 15} <= {x["line"] for x in report["lines"] if Path(x["file"]).name == "train.py"}


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


def test_micro_batch_is_for_a_step_function_only(project: Path) -> None:
    r = run_stepscope("profile", "main.py", "--line", "8", "--micro-batch", cwd=project)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1] == ("stepscope: --micro-batch applies to a step function (--function): "
                                                 "a loop's step is its iteration")
