"""Stepscope in a real VS Code: the built .vsix installed into code-server, driven in Chromium.

Screenshots land in test-results/vscode/. Needs the tools from tools/setup-tools.sh and the
.vsix from tools/build-vsix.sh (`make test` does both first).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .codeserver import REPO, RESULTS, CodeServer, require_tools

pytestmark = [pytest.mark.vscode, pytest.mark.slow]

EXAMPLE = REPO / "examples" / "train_cpu.py"
# The interpreter that runs the user's program must have torch: the project's own virtualenv.
TORCH_PYTHON = Path(sys.executable)


def line_of(text: str, path: Path = EXAMPLE) -> int:
    """1-based number of the first line containing `text`."""
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} is not in {path}")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    # A space and a non-ASCII letter in the path: both have broken editor tools before.
    ws = tmp_path / "my project ü"
    ws.mkdir()
    shutil.copy(EXAMPLE, ws / EXAMPLE.name)
    return ws


@pytest.fixture
def code_server(tmp_path: Path, workspace: Path):
    require_tools()
    instances: list[CodeServer] = []

    def start(**options) -> CodeServer:
        instance = CodeServer(root=tmp_path / "vscode", workspace=workspace, **options)
        instances.append(instance)
        instance.start()
        return instance

    yield start
    for instance in instances:
        instance.stop()


def assert_driver_ok(result: dict, server: CodeServer) -> None:
    if not result.get("ok"):
        pytest.fail(
            f"{result.get('error', 'the driver failed')}\n"
            f"steps: {result.get('steps')}\nnotifications: {result.get('notificationsAtFailure')}\n"
            f"driver: {result.get('driver_output')}\nStepscope log:\n{server.stepscope_log()[-3000:]}",
            pytrace=False,
        )


def assert_ss101_on_item_call(problems: list[str]) -> None:
    item_line = line_of("running += loss.item()")
    rows = [row for row in problems if "SS101" in row]
    assert rows, f"no SS101 in the Problems view: {problems}"
    assert any(f"Ln {item_line}," in row for row in rows), f"SS101 not on line {item_line}: {rows}"


def test_profile_this_step_paints_inline_timings(code_server, workspace: Path) -> None:
    # The user's launch configurations: a torchrun one that runs another file comes first and must be
    # passed over; the one for this file starts the program its way.
    (workspace / ".vscode").mkdir(exist_ok=True)
    (workspace / ".vscode" / "launch.json").write_text(json.dumps({"version": "0.2.0", "configurations": [
        {"name": "DDP (torchrun)", "type": "debugpy", "request": "launch", "module": "torch.distributed.run",
         "args": ["--nproc_per_node", "2", "${workspaceFolder}/train_ddp.py"]},
        {"name": "Train (short)", "type": "debugpy", "request": "launch",
         "program": "${workspaceFolder}/train_cpu.py", "args": ["--steps", "24"], "python": str(TORCH_PYTHON)}]}))
    # A profile setting reaches the run by its name in package.json (the client lists none itself).
    server = code_server(settings={"stepscope.interpreter": str(TORCH_PYTHON), "stepscope.profile.active": 4})
    result = server.drive(
        "profile", RESULTS / "profile", file=EXAMPLE.name, cursorLine=line_of("logits = model(x)"),
        python=str(TORCH_PYTHON),
    )
    assert_driver_ok(result, server)
    assert_ss101_on_item_call(result["problems"])
    log = server.stepscope_log()
    assert f"at {TORCH_PYTHON} (stepscope.interpreter in the user settings)" in log, log[-2000:]

    # The first real run is confirmed in a modal dialog before it starts (once per workspace).
    assert "runs your program for real" in result["confirmDialog"] and "STEPSCOPE_RUN=1" in result["confirmDialog"]
    assert result["dialogsOnSecondRun"] == 0
    assert not any("real updates" in text for text in result.get("progressTexts", []))
    # The CodeLens run, cancelled: the progress named the loop and said the program was starting
    # before its first step; the notification closes, nothing is painted, no error, a notice.
    loop = line_of("for x, y in loader:")
    assert any(f"the loop at train_cpu.py:{loop} (for x, y in loader:)" in t for t in result["startupProgress"]), \
        result["startupProgress"]
    assert any("starting train_cpu.py (imports, data, model)" in t for t in result["startupProgress"])
    assert any("profiling" in text for text in result["runningStatus"]), result["runningStatus"]
    assert result["cancelClosedAfterMs"] < 20_000
    assert result["timingsAfterCancel"] == []
    assert result["errorsAfterCancel"] == []
    assert "last good run" in result["cancelNotice"]
    assert "Profile cancelled" in log
    statuses = [json.loads((r / "status.json").read_text())["status"]
                for r in sorted((workspace / ".stepscope").glob("runs/*"))]
    assert statuses[0] == "cancelled", statuses  # the program was stopped, not left to finish

    # The command-palette run: the server's progress reports show in the notification, then
    # ms/step is painted on the statements of the training loop.
    progress = [t for t in result["progressTexts"] if re.search(r"profiling the loop at train_cpu\.py:\d+ .*: \S", t)]
    assert progress, f"no progress message reached the notification: {result['progressTexts']}"
    timings = result["timings"]
    assert all("ms/step" in t["label"] for t in timings), timings
    decorated = " ".join(t["line"] for t in timings)
    assert "loss.backward()" in decorated and "model(x)" in decorated, timings
    assert any("ms/step" in text for text in result["status"]), result["status"]
    runs = sorted((workspace / ".stepscope").glob("runs/*"))
    assert runs, "the profile left no run folder"
    good_run = next(r for r in runs if (r / "report.json").exists())
    spec = json.loads((good_run / "spec.json").read_text())
    assert spec["argv"] == ["--steps", "24"]
    assert spec["profile"]["schedule"]["active"] == 4, spec["profile"]
    assert 'launch configuration "Train (short)"' in log and "DDP (torchrun)" not in log
    # Server INFO lines are info in the log, not errors; the profiler's USDT lines are not there.
    assert re.search(r"\[info\] stepscope\.lsp: profiling ", log), log[-2000:]
    assert not re.search(r"\[error\] stepscope\.lsp: profiling ", log)
    assert "profiler_start" not in log
    # The hover comes from the server (textDocument/hover): the line's figures, the operators it
    # called, its run and machine, the share's basis, and a link into the trace panel.
    hover = result["hover"]
    assert "wall:" in hover and "share of the mean step" in hover and "CPU self:" in hover, hover
    assert "Operators it called" in hover and "aten::linear" in hover, hover
    assert good_run.name in hover and "host" in hover, hover
    assert "Open in the trace panel" in result["hoverLinks"], result["hoverLinks"]
    # ... which opens the trace panel host on that run, the hovered line's row in view
    assert result["hoverPanel"] == {"line": line_of("logits = model(x)"), "runId": good_run.name}, result["hoverPanel"]
    # The runs view lists the run (and the cancelled one).
    assert any("train_cpu.py:" in row and "ms/step" in row for row in result["runs"]), result["runs"]
    assert any("cancelled" in row for row in result["runs"]), result["runs"]
    # the runs live in .stepscope/, which the Explorer leaves out by default (files.exclude)
    assert EXAMPLE.name in result["explorer"] and ".stepscope" not in result["explorer"], result["explorer"]

    # An edit changes one line: that line's timing goes, every other line keeps its own.
    before = {t["line"].strip(): t["label"] for t in timings}
    after = {t["line"].strip(): t["label"] for t in result["timingsAfterEdit"]}
    assert after == {line: label for line, label in before.items() if line != "logits = model(x)"}, (before, after)
    # Saved, closed and reopened: the timings come back on the same lines.
    reopened = {t["line"].strip(): t["label"] for t in result["timingsAfterReopen"]}
    assert reopened == after, (after, reopened)

    # A profile that fails: the reason names the user's line or the cause, the last good timings stay
    # (marked as from the earlier run), the status item keeps its figure with a warning.
    assert "fewer than" in result["failureNotice"] and "last good run" in result["failureNotice"], result["failureNotice"]
    assert str(workspace) not in result["failureNotice"]
    assert "--wait" not in result["failureNotice"] and "stepscope.profile.warmup" in result["failureNotice"]
    kept = {t["line"].strip(): t["label"] for t in result["timingsAfterFailure"]}
    assert kept == {line: f"{label} · earlier run" for line, label in after.items()}, kept
    assert any("ms/step" in text for text in result["statusAfterFailure"]), result["statusAfterFailure"]
    # Clicking the failed run in the runs view opens its log: how it ended and why, then program.log.
    opened = result["failedRunLog"].splitlines()
    assert opened[0].startswith("Run ") and ": failed: the loop ran 1 steps" in opened[0], opened[:3]
    assert "--- program.log ---" in opened, opened[:5]
    # After a window reload the status item is back, naming the run whose labels the file shows, and
    # the panel it opens shows that run (not the newest run, the failed one).
    assert len(result["statusAfterReload"]) == 1 and result["timingsAfterReload"], result["statusAfterReload"]
    assert result["panelAfterReload"] == good_run.name, (result["panelAfterReload"], good_run.name)


def test_the_trace_panel_shows_the_run_and_leads_to_its_lines(code_server, workspace: Path) -> None:
    """Profile, open the panel from the status bar, read it, click a row, a span and a finding (each
    lands the cursor on its line), open it on a finding from its code action, profile again."""
    server = code_server(settings={"stepscope.interpreter": str(TORCH_PYTHON)})
    backward, forward = line_of("loss.backward()"), line_of("logits = model(x)")
    result = server.drive(
        "panel", RESULTS / "panel", file=EXAMPLE.name, cursorLine=forward, rowLine=backward, spanLine=forward,
    )
    assert_driver_ok(result, server)
    runs = sorted(p.name for p in (workspace / ".stepscope" / "runs").iterdir())
    assert len(runs) == 2, runs

    # The panel opened on the run just made, with its report and timeline.
    state = result["panelState"]
    assert state["runId"] == runs[0]
    assert state["title"].startswith(f"{EXAMPLE.name}, the loop at line {line_of('for x, y in loader:')} · run ")
    assert state["spans"] > 100 and state["lines"] >= 5 and not state["stale"]
    assert result["panelTabTitle"].startswith(f"Trace: {EXAMPLE.name}")
    assert result["banner"] is None, result["banner"]
    overview = result["overview"]
    assert "ms/step" in overview and "CPU only" in overview and "Findings" in overview, overview[:800]

    # Its tables show rows; a row, a span and a finding each put the cursor on their line.
    lines = {int(r["line"]) for r in result["lineRows"]}
    assert {backward, forward} <= lines, result["lineRows"]
    assert all(re.fullmatch(r"[\d.]+ (s|ms|µs)", r["wall"]) for r in result["lineRows"]), result["lineRows"]
    assert result["operatorRows"] > 3
    assert result["timelineTracks"] >= 1
    assert result["rowLanded"] == {"tab": EXAMPLE.name, "line": backward}, result["rowLanded"]
    assert result["spanLanded"] == {"tab": EXAMPLE.name, "line": forward}, result["spanLanded"]
    kind, finding_line = next((k, n) for k, n in state["findings"] if n)
    assert result["findingLinkText"] == f"{EXAMPLE.name}:{finding_line}"
    assert result["findingLanded"] == {"tab": EXAMPLE.name, "line": finding_line}, result["findingLanded"]

    # A finding's code action opens the panel on its line: the row in view and focused.
    assert "in the trace panel" in result["codeAction"], result["codeAction"]
    assert result["revealed"]["line"] == finding_line and result["revealed"]["focused"], result["revealed"]

    # A new profile: the open panel follows it.
    assert result["followedRunId"] == runs[1]

    # Compared from the runs view, the two profile runs are a view of the panel: their statements side by
    # side (the same code, so each statement beside itself), as `stepscope runs compare` gives them.
    compared = result["statements"]
    assert {compared["a"], compared["b"]} == set(runs) and compared["runId"] == runs[1], compared
    assert compared["tabs"] == ["Overview"] and "statement by statement" in compared["overview"], compared["overview"][:600]
    backward_row = next(r for r in compared["rows"] if r["statement"] == "loss.backward()")
    assert backward_row["a"] == backward_row["b"] == f"{EXAMPLE.name}:{backward}", backward_row
    cli = subprocess.run([str(TORCH_PYTHON), "-m", "stepscope", "runs", "compare", *runs, "--json"], cwd=workspace,
                         capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    assert len(json.loads(cli.stdout)["lines"]) == len(compared["rows"])  # every statement in both: one row each
    log = server.stepscope_log()
    assert "Trace panel: refused" not in log and "not opening" not in log, log[-3000:]


# A LightningModule-shaped class whose loop runs in another module (as a framework runs it): the file
# has no loop, and the lens over `training_step` measures each call of it.
FUNCTION_STEP = """\
import torch

from minitrainer import fit


class LitModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(32, 1)

    def training_step(self, batch):
        return self.net(batch).pow(2).mean()


fit(LitModel(), steps=40)
"""
MINITRAINER = """\
import torch


def fit(module, steps):
    opt = torch.optim.SGD(module.parameters(), lr=0.05)
    for _ in range(steps):
        module.training_step(torch.randn(16, 32)).backward()
        opt.step()
        opt.zero_grad()
"""


def test_measure_this_step_shows_its_result_its_distribution_and_a_comparison(code_server, workspace: Path) -> None:
    """Measure from the lens, open the result in the panel, measure again from the palette, compare
    the two from the runs view; then measure a step function from the lens over its def line."""
    (workspace / "lit_step.py").write_text(FUNCTION_STEP)
    (workspace / "minitrainer.py").write_text(MINITRAINER)
    server = code_server(settings={"stepscope.interpreter": str(TORCH_PYTHON), "stepscope.measure.passes": 6,
                                   "stepscope.measure.warmup": 2})
    result = server.drive("measure", RESULTS / "measure", file=EXAMPLE.name, cursorLine=line_of("logits = model(x)"),
                          functionFile="lit_step.py")
    assert_driver_ok(result, server)
    runs = sorted(p.name for p in (workspace / ".stepscope" / "runs").iterdir())
    assert len(runs) == 3, runs
    function_run = next(r for r in runs if "lit_step" in r)
    runs.remove(function_run)
    assert "Profile this step" in result["lenses"] and "Measure this step" in result["lenses"], result["lenses"]
    assert "Measure" in result["confirmDialog"] and "real updates" in result["confirmDialog"]
    assert result["dialogsOnSecondRun"] == 0

    # The result: the median without the profiler, its IQR, the machine, and an action to open it.
    first = result["firstResult"]
    assert re.search(r"[\d.]+ ms/step without the profiler \(median of 6 passes; IQR [\d.]+ ms, \d+% of the median",
                     first), first
    assert "CPU only" in first and "Open in Panel" in first, first
    assert any(re.search(r"[\d.]+ ms/step measured", t) for t in result["status"]), result["status"]
    measured = json.loads((workspace / ".stepscope" / "runs" / runs[0] / "measure.json").read_text())
    assert len(measured["raw_ms"]) == 6 and len(measured["warmup_ms"]) == 2

    # The panel: the distribution of that run, warm-ups apart; no report, no timeline.
    panel = result["panel"]
    assert panel["runId"] == runs[0] and not panel["report"] and not panel["timeline"], panel
    assert (panel["passes"], panel["measuredDots"], panel["warmups"], panel["warmDots"]) == (6, 6, 2, 2), panel
    for words in ("Measured without the profiler", "p10 / p90", "min / max", "6 measured; 2 warm-up apart",
                  "Measured on CPU only", "(first → last of 6 passes)"):  # the last: what the step computed
        assert words in panel["overview"], (words, panel["overview"][:1500])
    assert panel["title"].startswith(f"{EXAMPLE.name}, the loop at line {line_of('for x, y in loader:')} · measured")
    assert result["followed"] == runs[1]  # the open panel follows the next measure

    # Compared from the runs view: both distributions, the ratio of medians (of means where the passes are
    # skewed, as they may be on a busy machine), its interval, the verdict.
    compared = result["compared"]
    assert compared["verdict"] in ("faster", "slower", "no detectable difference"), compared
    assert compared["measuredDots"] == 6 and compared["baselineDots"] == 6, compared
    # the verdict with the margin it was called against (a difference ruled out apart from inconclusive)
    assert re.search(r"(median|mean), 95% interval [\d.]+ – [\d.]+: ((faster|slower) \(beyond the \d+% margin\)|"
                     r"no difference larger than \d+%|inconclusive: the interval reaches past ±\d+%[^\n]*)\.",
                     compared["overview"]), compared["overview"][-800:]
    cli = subprocess.run([str(TORCH_PYTHON), "-m", "stepscope", "runs", "compare", *runs, "--json"], cwd=workspace,
                         capture_output=True, text=True, timeout=120)
    assert json.loads(cli.stdout)["verdict"] == compared["verdict"]  # the same comparison as the CLI's
    assert all("measured" in row for row in result["runs"][:2]), result["runs"]
    # from the command palette, Compare Runs asks for the first run among both measure runs
    asked = result["paletteCompare"]
    assert sum("measured" in row for row in asked["rows"]) == 2, asked

    # The lens over a step function (the file has no loop): each call of it measured, its loss read
    # from what it returned.
    assert result["functionLenses"] == ["Profile this step", "Measure this step"], result["functionLenses"]
    assert any("each call of LitModel.training_step (lit_step.py:11)" in t for t in result["functionProgress"]), \
        result["functionProgress"]
    assert "ms/step without the profiler" in result["functionResult"], result["functionResult"]
    measured = json.loads((workspace / ".stepscope" / "runs" / function_run / "measure.json").read_text())
    assert measured["scope"]["step"]["function"] == "LitModel.training_step" and measured["value"] == "return"
    assert len(measured["values"]) == 6 and measured["values"][-1] < measured["values"][0]


def test_try_this_fix_shows_its_progress_its_verdict_and_its_diff_and_apply_edits_the_file(code_server,
                                                                                           workspace: Path) -> None:
    """A finding's variant tried from its light bulb: cancelled first (nothing left behind), then to its
    verdict and diff, then applied (the very change measured, written to the file)."""
    made = subprocess.run([str(TORCH_PYTHON), "-m", "stepscope", "profile", EXAMPLE.name, "--wait", "0", "--warmup", "1",
                           "--active", "3", "--", "--steps", "16"], cwd=workspace, capture_output=True, text=True,
                          timeout=300)
    assert made.returncode == 0, made.stderr[-2000:]
    before = (workspace / EXAMPLE.name).read_text()
    server = code_server(settings={"stepscope.interpreter": str(TORCH_PYTHON), "stepscope.measure.passes": 4,
                                   "stepscope.measure.warmup": 2, "stepscope.measure.runs": 1})
    title = "DataLoader with 2 workers"
    result = server.drive("tryFix", RESULTS / "try", file=EXAMPLE.name, cursorLine=line_of("logits = model(x)"),
                          findingLine=line_of("for x, y in loader:"), variantTitle=title)
    assert_driver_ok(result, server)

    # the light bulb offers the finding's variants, and the static rule's quick fix, to try
    assert f"Try this fix (measure it): {title}" in result["actions"], result["actions"]
    assert "Try this fix (measure it): Read the batches before the loop (an experiment)" in result["actions"]
    # the finding's next check, the step timed without the profiler, is an action too
    assert "Measure this step without the profiler (the finding's next check)" in result["actions"], result["actions"]
    # progress, then a cancel that leaves nothing behind: the file as it was, no scratch copy, both runs cancelled
    assert any(re.search(r"the code as it is, process 1/1: pass \d+/6", t) for t in result["progressTexts"]), \
        result["progressTexts"]
    assert "no file was changed" in result["cancelNotice"]
    assert result["unchangedAfterCancel"] and result["scratchAfterCancel"] == []
    assert result["scratchGoneAfterMs"] < 20_000
    cancelled = [r for r in (workspace / ".stepscope" / "runs").iterdir()
                 if json.loads((r / "status.json").read_text())["status"] == "cancelled"]
    assert len(cancelled) == 2, cancelled

    # the verdict (with the margin, what it saves or not, whether the values changed) and the diff
    assert re.search(rf"{title}: (faster|slower|no difference|inconclusive)", result["verdict"]), result["verdict"]
    assert "values unchanged" in result["verdict"] and "Apply" in result["verdict"], result["verdict"]
    assert result["diffTab"].startswith(f"{EXAMPLE.name} ↔ tried: {title}"), result["diffTab"]
    assert "num_workers=2, persistent_workers=True" in result["diffText"]
    assert result["unchangedBeforeApply"]  # nothing is edited before the user asks
    # Apply: the file holds exactly the text that was measured
    tried = next(r for r in (workspace / ".stepscope" / "runs").iterdir() if (r / "try.json").exists()
                 and json.loads((r / "status.json").read_text())["status"] == "complete")
    measured = json.loads((tried / "try.json").read_text())["change"]["files"][0]
    assert measured["before"] == before
    assert result["textAfterApply"] == measured["after"] == (workspace / EXAMPLE.name).read_text()
    assert "applied DataLoader with 2 workers to train_cpu.py" in result["appliedNotice"]


def test_restricted_mode_shows_the_trace_panel_of_an_earlier_run(code_server, workspace: Path) -> None:
    made = subprocess.run([str(TORCH_PYTHON), "-m", "stepscope", "profile", EXAMPLE.name, "--active", "3",
                           "--warmup", "1", "--json"], cwd=workspace, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr[-2000:]
    (run,) = (workspace / ".stepscope" / "runs").iterdir()
    server = code_server(settings={"stepscope.interpreter": str(TORCH_PYTHON)}, trusted=False)
    backward = line_of("loss.backward()")
    result = server.drive(
        "panelRestricted", RESULTS / "panel-restricted", file=EXAMPLE.name, cursorLine=line_of("logits = model(x)"),
        rowLine=backward,
    )
    assert_driver_ok(result, server)
    assert result["restrictedIndicator"], "the workspace did not open in restricted mode"
    assert result["panelState"]["runId"] == run.name and result["panelState"]["spans"] > 100
    assert result["rowLanded"] == {"tab": EXAMPLE.name, "line": backward}, result["rowLanded"]
    assert [p.name for p in (workspace / ".stepscope" / "runs").iterdir()] == [run.name], "restricted mode ran the program"
    # Share Trace… from the panel, in restricted mode too: the copy beside the trace, the original kept
    assert "redacted copy written: trace.redacted.json" in result["shared"], result["shared"]
    # Open in Perfetto says where the run's trace is and that nothing is sent anywhere
    assert "trace.json (" in result["perfetto"] and "sends it nowhere" in result["perfetto"], result["perfetto"]
    assert "Copy Path" in result["perfetto"] and "Redacted Copy" in result["perfetto"], result["perfetto"]
    assert (run / "trace.redacted.json").is_file() and (run / "trace.json").is_file()
    check = subprocess.run([str(TORCH_PYTHON), "-m", "stepscope", "redact", str(run / "trace.redacted.json"), "--check"],
                           cwd=workspace, capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout[-2000:]  # nothing left to redact in the copy


def test_restricted_mode_checks_code_but_does_not_run_it(code_server, workspace: Path) -> None:
    # A run made earlier (by the CLI): viewing it needs no trust.
    made = subprocess.run([str(TORCH_PYTHON), "-m", "stepscope", "profile", EXAMPLE.name, "--warmup", "1",
                           "--active", "2", "--", "--steps", "8"], cwd=workspace, capture_output=True, text=True,
                          timeout=300)
    assert made.returncode == 0, made.stderr
    (earlier,) = (workspace / ".stepscope" / "runs").iterdir()
    server = code_server(settings={"stepscope.interpreter": str(TORCH_PYTHON)}, trusted=False)
    result = server.drive(
        "restricted", RESULTS / "restricted", file=EXAMPLE.name, cursorLine=line_of("logits = model(x)"),
    )
    assert_driver_ok(result, server)

    assert result["restrictedIndicator"], "the workspace did not open in restricted mode"
    assert_ss101_on_item_call(result["problems"])
    assert "only in a trusted workspace" in result["refusal"], result["refusal"]
    assert "Manage Workspace Trust" in result["refusal"]
    assert result["timings"] == []
    assert [p.name for p in (workspace / ".stepscope" / "runs").iterdir()] == [earlier.name], \
        "restricted mode ran the program"
    assert result["lensesOffered"] == 0  # Profile this step cannot run here: not offered
    assert any("train_cpu.py:" in row and "ms/step" in row for row in result["runs"]), result["runs"]
    assert any("ms/step" in t["label"] for t in result["timingsOfOpenedRun"]), result["timingsOfOpenedRun"]
    # the editor's agents are offered the MCP server without --allow-run: its tools that run code refuse
    offered = re.search(r'MCP server "Stepscope" for agents: (.*)', server.stepscope_log())
    assert offered, server.stepscope_log()[-2000:]
    assert "--allow-run" not in offered.group(1) and "restricted mode" in offered.group(1), offered.group(1)


def test_vsix_on_a_plain_python_checks_code_and_explains_failures(code_server, tmp_path: Path) -> None:
    """A user with only a bare Python: the .vsix brings the server and its dependencies, and what
    cannot work (no torch to profile with, a wrong interpreter path) is said in one clear message."""
    venv = tmp_path / "plain venv"
    base_python = Path(sys.base_prefix) / "bin" / "python3"
    subprocess.run([str(base_python), "-m", "venv", "--without-pip", str(venv)], check=True)
    for module in ("stepscope", "pygls", "lsprotocol", "orjson", "msgspec", "zlib_ng", "torch"):
        probe = subprocess.run([str(venv / "bin" / "python"), "-c", f"import {module}"], capture_output=True)
        assert probe.returncode != 0, f"the plain venv should not have {module}"

    plain_python = venv / "bin" / "python"
    missing = tmp_path / "no such python"
    old_python = python_older_than_3_10()
    server = code_server(settings={"stepscope.interpreter": str(plain_python)})
    result = server.drive(
        "failures", RESULTS / "plain-python", file=EXAMPLE.name, cursorLine=line_of("logits = model(x)"),
        missingInterpreter=str(missing), oldInterpreter=str(old_python) if old_python else None,
    )
    assert_driver_ok(result, server)

    # Static checks run from the bundled server on the bare interpreter.
    assert_ss101_on_item_call(result["problems"])
    log = server.stepscope_log()
    assert f"at {plain_python} (stepscope.interpreter in the user settings)" in log, log[-2000:]
    assert "bundled/tool/server.py" in log, log[-2000:]

    # Profiling needs torch in the interpreter: the server's one-line reason, with the logs at hand.
    error = result["profileError"]
    assert "torch" in error, error
    assert "Open Logs" in error
    assert "Profile failed" in result["logsShown"], result["logsShown"]
    # Nothing to compare (the failed run has no figures): said in one line, nothing opens.
    assert "this workspace has none" in result["compareRefused"], result["compareRefused"]

    # A wrong interpreter path: the problem and what to do about it.
    problem = result["interpreterError"]
    assert "cannot find the interpreter" in problem and "workspace settings" in problem, problem
    assert "Select Interpreter" in problem and "Open Logs" in problem

    if old_python:
        old = result["oldInterpreterError"]
        assert "needs Python 3.10 or newer" in old and "Select Interpreter" in old, old
    else:
        print("no CPython older than 3.10 on this machine: the version message was not exercised")


def python_older_than_3_10() -> Path | None:
    """A real CPython 3.6-3.9 from PATH or pyenv, to see the version check refuse it."""
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = [Path(p) / f"python3.{m}" for m in range(9, 5, -1) for p in os.environ["PATH"].split(os.pathsep)]
    candidates += sorted(pyenv_root.glob("versions/3.[6-9].*/bin/python3"), reverse=True)
    for candidate in candidates:
        if not candidate.is_file():
            continue
        probe = subprocess.run([str(candidate), "-c", "import sys; print(sys.version_info[1])"],
                               capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.strip().isdigit() and int(probe.stdout) < 10:
            return candidate
    return None


def test_agents_find_stepscope_among_the_editors_mcp_servers_and_it_starts(code_server, workspace: Path) -> None:
    """The extension registers `stepscope mcp` with the editor's MCP support: MCP: List Servers shows
    Stepscope without any configuration, and starting it from there gives the editor its tools."""
    # the AI features on: the editor's MCP commands belong to them (the other tests turn them off)
    server = code_server(settings={"stepscope.interpreter": str(TORCH_PYTHON), "chat.disableAIFeatures": False})
    result = server.drive("mcp", RESULTS / "mcp", file=EXAMPLE.name, cursorLine=line_of("logits = model(x)"))
    assert_driver_ok(result, server)

    assert any(row.startswith("Stepscope") and "Stopped" in row for row in result["mcpServers"]), result["mcpServers"]
    assert any("Start Server" in row for row in result["mcpActions"]), result["mcpActions"]
    # the editor started the bundled server with the language server's interpreter and listed its
    # tools: profile, measure, try_fix, analyze, check, runs
    assert "Discovered 6 tools" in result["mcpOutput"], result["mcpOutput"][-2000:]
    assert any(row.startswith("Stepscope") and "Running" in row for row in result["mcpServersRunning"])
    log = server.stepscope_log()
    started = re.search(r'MCP server "Stepscope" for agents: (.*)', log)
    assert started, log[-2000:]
    assert started.group(1).startswith(f"{TORCH_PYTHON} ") and "bundled/tool/server.py mcp" in started.group(1)
    # a trusted workspace: the tools may run the program, in this folder
    assert f"--root={workspace} --allow-run" in started.group(1), started.group(1)
