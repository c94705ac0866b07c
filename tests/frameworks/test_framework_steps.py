"""Framework steps on the real frameworks: Lightning, the HF Trainer and Accelerate, each profiled and
measured through the CLI on the examples (tiny CPU configs, nothing downloaded).

Each run is checked as a user reads it: exit 0; the step is the optimizer step where gradients
accumulate (and the report says so); the user's own lines (model, loss, data) are in the report, with a
row for the framework's own time; no region that only wraps other work leads the regions; and the step
times agree with the program's own timer over the same steps, in the same process (the examples print
`own step N: X ms`). The two clocks read the same steps, so their sums differ only by where each takes
the step's boundary (the framework's hooks between its callback and the step's call): a bound on that,
not on speed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ..analysis.invariants import violations
from ..conftest import EXAMPLES, run_stepscope
from stepscope.analysis.render import render_text

pytestmark = [pytest.mark.torch, pytest.mark.slow]

SHORT = ("--wait", "1", "--warmup", "1", "--active", "3")
OWN_STEP = re.compile(r"own step \d+: ([0-9.]+) ms")
#: the clocks take a step's boundary at different places (a callback vs. the step's call): over the
#: same steps their sums may differ by a share and a few hook calls' time, no more
SHARE, SLACK_MS = 0.15, 25.0


@pytest.fixture
def project(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("lightning_tiny.py", "hf_trainer_tiny.py", "accelerate_tiny.py"):
        shutil.copy(EXAMPLES / name, ws / name)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def line_of(path: Path, text: str) -> int:
    """The line of `path` that holds `text` (the tests name lines by their code, not by number)."""
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def own_steps(stderr: str) -> list[float]:
    return [float(m) for m in OWN_STEP.findall(stderr)]


def assert_same_steps(stepscope_ms: list[float], stderr: str) -> None:
    """Stepscope's step times end where the program stopped, as do the program's own: the last ones
    of each are the same steps."""
    own = own_steps(stderr)[-len(stepscope_ms):]
    assert len(own) == len(stepscope_ms), (own, stepscope_ms)
    ours, theirs = sum(stepscope_ms), sum(own)
    assert abs(ours - theirs) <= SHARE * theirs + SLACK_MS, (stepscope_ms, own)


def profile(ws: Path, script: str, *args: str, program: tuple[str, ...] = ()) -> tuple[dict, str]:
    r = run_stepscope("profile", script, *args, *SHORT, "--json", "--", *program, cwd=ws)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout)
    assert violations(report) == []
    return report, r.stderr


def lines_of(report: dict, path: Path) -> dict[int, dict]:
    return {x["line"]: x for x in report["lines"] if x["file"] == str(path)}


def part(report: dict, package: str, role: str) -> dict | None:
    return next((p for p in report["time_split"]["parts"] if p["package"] == package and p["role"] == role), None)


def assert_no_wrapper_leads(report: dict, text: str) -> None:
    """No region above half the step only wraps other work: the regions are told by their own time,
    and the text's first region is one that does its own."""
    basis = report["window"]["mean_step_ms"]
    for region in report["regions"]:
        assert region["own_ms"] <= region["wall_ms"] + 1e-4
    first = text.split("by own time:\n")[1].splitlines()[0]
    own, wall = (float(x) for x in re.findall(r"(?:own|wall) +([0-9.]+) ms", first)[:2])
    assert own <= 0.5 * basis or own >= 0.5 * wall, first


def test_lightning_step_is_the_optimizer_step_with_the_users_lines_and_lightnings_own_time(project: Path) -> None:
    script = project / "lightning_tiny.py"
    report, stderr = profile(project, "lightning_tiny.py", "--function", "LitClassifier.training_step",
                             program=("--accumulate", "2", "--steps", "14"))
    step = report["step_definition"]
    assert (step["unit"], step["calls_per_step"], step["optimizer_steps_per_step"]) == ("optimizer step", 2.0, 1.0)
    assert step["caller"]["package"] in ("lightning", "pytorch_lightning")
    lines = lines_of(report, script)
    for code in ("h = self.body(x)", "return self.head(h)", "loss = classification_loss(logits, y)",
                 "return F.cross_entropy(logits, labels)"):
        assert line_of(script, code) in lines, code
    # the forward's backward is the user's line's, though Lightning runs it inside optimizer.step(closure)
    assert lines[line_of(script, "h = self.body(x)")]["backward_ms"] > 0
    framework = part(report, step["caller"]["package"], "caller")
    assert framework is not None and framework["ms"] > 0
    optimizer = next(r for r in report["regions"] if r["label"].startswith("Optimizer.step#"))
    assert optimizer["own_ms"] < optimizer["wall_ms"]  # it wraps the closure: its own part is the update
    text = render_text(report)
    assert "the step: one optimizer step: 2 calls (micro-batches) of LitClassifier.training_step" in text
    assert f"lightning_tiny.py:{line_of(script, 'def training_step')} (the def line): the 2 calls of " \
           "training_step per step" in text
    assert re.search(r"in (pytorch_)?lightning: its loop and hooks around training_step +[0-9.]+ ms", text), text
    assert_no_wrapper_leads(report, text)
    assert_same_steps(report["unprofiled"]["raw_ms"], stderr)


def test_lightning_measure_times_the_optimizer_steps_the_program_times(project: Path) -> None:
    r = run_stepscope("measure", "lightning_tiny.py", "--function", "LitClassifier.training_step", "--warmup", "1",
                      "--passes", "4", "--json", "--", "--accumulate", "2", "--steps", "10", cwd=project)
    assert r.returncode == 0, r.stderr[-3000:]
    measured = json.loads(r.stdout)
    assert measured["scope"]["step"]["unit"] == "optimizer step" and measured["scope"]["step"]["calls_per_step"] == 2
    assert_same_steps(measured["raw_ms"], r.stderr)


def test_hf_trainer_step_named_in_the_package_shows_the_users_loss_and_the_trainers_own_time(project: Path) -> None:
    script = project / "hf_trainer_tiny.py"
    report, stderr = profile(project, "hf_trainer_tiny.py", "--function", "transformers.trainer:Trainer.training_step",
                             program=("--accumulate", "2", "--steps", "14"))
    step = report["step_definition"]
    assert (step["unit"], step["calls_per_step"], step["package"]) == ("optimizer step", 2.0, "transformers")
    assert Path(step["file"]).name == "trainer.py" and not Path(step["file"]).is_relative_to(project)
    # the run folder is the workspace's, not the package's
    assert Path(report["traces"][0]).is_relative_to(project / ".stepscope" / "runs")
    lines = lines_of(report, script)
    # the user's loss lines; the dataset's `__getitem__` runs inside the batch read, and whether a function the
    # step calls gets lines of its own still depends on its measured time: on a busy machine it can be folded
    # into its caller, so it is not required here
    for code in ("logits = outputs.logits[:, :-1]", "return F.cross_entropy(logits, targets)"):
        assert line_of(script, code) in lines, code
    trainer_lines = [x for x in report["lines"] if x["file"] == step["file"]]
    assert any(x["line"] == step["line"] for x in trainer_lines) and len(trainer_lines) > 3
    assert part(report, "transformers", "step")["ms"] > 0 and part(report, "transformers", "caller") is not None
    text = render_text(report)
    assert "the step: one optimizer step: 2 calls (micro-batches) of Trainer.training_step" in text
    assert re.search(r"in transformers: the step's own lines \(training_step in trainer.py\) +[0-9.]+ ms", text), text
    assert "transformers/trainer.py:" in text  # its lines by the package's own path
    assert_no_wrapper_leads(report, text)
    assert_same_steps(report["unprofiled"]["raw_ms"], stderr)


def test_hf_trainer_measure_times_the_optimizer_steps_the_program_times(project: Path) -> None:
    r = run_stepscope("measure", "hf_trainer_tiny.py", "--function", "transformers.trainer:Trainer.training_step",
                      "--warmup", "1", "--passes", "4", "--json", "--", "--steps", "8", cwd=project)
    assert r.returncode == 0, r.stderr[-3000:]
    measured = json.loads(r.stdout)
    assert measured["scope"]["step"]["unit"] == "optimizer step"
    assert_same_steps(measured["raw_ms"], r.stderr)


def test_accelerate_loop_is_profiled_and_measured_with_the_users_lines(project: Path) -> None:
    script = project / "accelerate_tiny.py"
    report, stderr = profile(project, "accelerate_tiny.py")
    assert report["step_definition"]["kind"] == "loop"
    lines = lines_of(report, script)
    for code in ("h = self.body(x)", "loss = F.cross_entropy(logits, labels)", "accelerator.backward(loss)"):
        assert line_of(script, code) in lines, code
    assert report["time_split"]["parts"][0]["owner"] == "you"
    assert_same_steps(report["unprofiled"]["raw_ms"], stderr)
    r = run_stepscope("measure", "accelerate_tiny.py", "--warmup", "1", "--passes", "4", "--json", cwd=project)
    assert r.returncode == 0, r.stderr[-3000:]
    assert_same_steps(json.loads(r.stdout)["raw_ms"], r.stderr)
