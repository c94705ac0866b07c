"""`stepscope try` end to end, a real torch program in a subprocess: the demo's input-bound finding,
a quick fix of SS101, a change of results, Apply, and bad input. After every try the user's files
and git state are byte-identical and no scratch copy is left."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from stepscope.history.store import History
from tests.conftest import run_stepscope
from tests.measure.programs import commit

pytestmark = [pytest.mark.torch, pytest.mark.slow]

QUICK = ("--runs", "1", "--warmup", "2", "--passes", "6")

# A step whose time a sleep sets (stable on a busy machine), which reads its loss back every step.
READ_BACK = '''import time

import torch

torch.manual_seed(0)
model = torch.nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(32, 16), torch.randn(32, 1)
total = 0.0
for step in range(40):
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    total += loss.item()
    time.sleep(0.02)
print(total)
'''


def git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(ws), *args], check=True, capture_output=True, text=True).stdout


def state(ws: Path) -> tuple:
    """The user's files (every byte, but .stepscope's) and git's view of them."""
    files = {str(p.relative_to(ws)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(ws.rglob("*"))
             if p.is_file() and not p.relative_to(ws).parts[0] in (".stepscope", ".git")}
    return files, git(ws, "status", "--porcelain"), git(ws, "diff", "--cached"), git(ws, "rev-parse", "HEAD")


def no_scratch_left(ws: Path) -> bool:
    scratch = ws / ".stepscope" / "scratch"
    return not scratch.exists() or not any(scratch.iterdir())


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.fixture
def repo(workspace: Path) -> Path:
    (workspace / "read_back.py").write_text(READ_BACK)
    commit(workspace, "the programs")
    (workspace / "notes.txt").write_text("untracked, mine")
    return workspace


def test_the_demo_s_input_bound_finding_tried_two_ways_keeps_the_values_and_compares_the_loops_pace(repo: Path):
    made = run_stepscope("profile", "train_cpu.py", "--json", "--", "--steps", "16", cwd=repo, timeout=600)
    assert made.returncode == 0, made.stderr[-2000:]
    report = json.loads(made.stdout)
    finding = next(f for f in report["findings"] if f["kind"] == "input-bound")
    assert [v["name"] for v in finding["variants"]][:2] == ["batch-ahead", "workers-2"], finding
    run = Path(report["traces"][0]).parent.name
    before = state(repo)

    r = run_stepscope("try", run, "--finding", "input-bound", "--variant", "batch-ahead", "--variant", "workers-2",
                      *QUICK, "--json", cwd=repo, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(r.stdout)
    tries = {t["name"]: t for t in doc["tries"]}
    assert set(tries) == {"batch-ahead", "workers-2"}
    for name, tried in tries.items():
        assert tried["values_match"] is True and not tried["results_changed"], name
        assert tried["improvement"] is (tried["verdict"] == "faster"), name
        # bursty passes (workers deliver batches in bursts) are compared by their mean: the loop's pace
        median, mean = tried["median_ms"], tried["mean_ms"]
        assert tried["method"]["statistic"] == ("mean" if abs(mean - median) > 0.1 * median else "median"), tried
    # reading the batches ahead takes the slow decode out of the step, on any machine; two workers help
    # only where cores are free for them (on 2 cores they compete with the step)
    assert tries["batch-ahead"]["verdict"] == "faster", (tries["batch-ahead"]["ratio"], tries["batch-ahead"]["ci95"])
    assert tries["batch-ahead"]["applicable"] is False  # an experiment: it answers the finding's question
    assert "num_workers=2, persistent_workers=True" in tries["workers-2"]["change"]["diff"]
    assert doc["source"] == {"kind": "finding", "run": run, "finding": "input-bound", "file": str(repo / "train_cpu.py"),
                             "line": finding["line"], "variants": ["batch-ahead", "workers-2"]}
    assert state(repo) == before and no_scratch_left(repo)

    # each change is a run of kind try, measured against the one baseline, in the history
    with History.open(repo) as history:
        rows = {t: history.get(tries[t]["run"]) for t in tries}
        assert all(row["kind"] == "try" and row["baseline"] == doc["baseline"]["run"] for row in rows.values())
        assert history.get(doc["baseline"]["run"])["kind"] == "measure"
    listed = run_stepscope("runs", "list", "--kind", "try", cwd=repo)
    assert all(tried["run"] in listed.stdout for tried in tries.values()), listed.stdout
    record = json.loads((Path(tries["workers-2"]["run_dir"]) / "try.json").read_text())
    assert record["baseline"] == doc["baseline"]["run"] and record["change"]["files"][0]["path"] == "train_cpu.py"


def test_a_quick_fix_of_ss101_gets_a_verdict_and_the_values_check(repo: Path):
    before = state(repo)
    line = line_of(repo / "read_back.py", "total += loss.item()")
    r = run_stepscope("try", "read_back.py", "--fix", f"SS101@{line}", *QUICK, cwd=repo, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    text = r.stdout
    assert "SS101-fix  Accumulate on the device; read total once after the loop" in text
    assert "ratio" in text and "95% interval" in text
    assert "values: the same in the 6 passes compared" in text
    assert "+    total += loss.detach().double()" in text and "-    total += loss.item()" in text  # the change, as a diff
    assert state(repo) == before and no_scratch_left(repo)


def test_an_edit_that_changes_the_loss_is_a_change_of_results_and_is_not_applied(repo: Path):
    patch = repo / "double.diff"
    patch.write_text("--- a/read_back.py\n+++ b/read_back.py\n@@ -11,1 +11,1 @@\n"
                     "-    loss = ((model(x) - y) ** 2).mean()\n+    loss = ((model(x) - y) ** 2).mean() * 2\n")
    before = state(repo)
    r = run_stepscope("try", "read_back.py", "--patch", str(patch), *QUICK, "--apply", "--json", cwd=repo, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(r.stdout)
    (tried,) = doc["tries"]
    assert tried["results_changed"] is True and tried["values_match"] is False and not tried["improvement"]
    assert doc["best"] is None
    assert doc["applied"]["applied"] is False
    assert state(repo) == before and no_scratch_left(repo)
    text = run_stepscope("try", tried["run"], "--apply", cwd=repo)
    assert text.returncode == 5 and "changed the results" in text.stderr and "--accept-changed-results" in text.stderr
    assert state(repo) == before


def test_apply_writes_the_measured_change_and_refuses_a_file_changed_since(repo: Path):
    script = repo / "read_back.py"
    patch = repo / "shorter.diff"
    patch.write_text("--- a/read_back.py\n+++ b/read_back.py\n@@ -16,1 +16,1 @@\n"
                     "-    time.sleep(0.02)\n+    time.sleep(0.002)\n")
    script.chmod(0o755)
    r = run_stepscope("try", "read_back.py", "--patch", str(patch), *QUICK, "--apply", "--json", cwd=repo, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(r.stdout)
    assert doc["tries"][0]["verdict"] == "faster" and doc["applied"] == {"applied": True, "name": "patch",
                                                                         "files": ["read_back.py"]}
    assert "time.sleep(0.002)" in script.read_text() and script.stat().st_mode & 0o777 == 0o755
    assert no_scratch_left(repo)
    # the same change again: the file is no longer what was tried
    again = run_stepscope("try", doc["tries"][0]["run"], "--apply", cwd=repo)
    assert again.returncode == 5 and again.stderr.count("\n") == 1, again.stderr
    assert "read_back.py changed since the try: not applied" in again.stderr


def test_a_change_that_breaks_the_program_fails_the_try_and_leaves_nothing(repo: Path):
    patch = repo / "broken.diff"
    patch.write_text("--- a/read_back.py\n+++ b/read_back.py\n@@ -14,1 +14,1 @@\n"
                     "-    opt.step()\n+    opt.step(); raise RuntimeError('broken by the change')\n")
    before = state(repo)
    r = run_stepscope("try", "read_back.py", "--patch", str(patch), *QUICK, cwd=repo, timeout=600)
    assert r.returncode == 3, r.stderr[-2000:]
    assert "change patch" in r.stderr.splitlines()[-1] and "broken by the change" in r.stderr
    assert state(repo) == before and no_scratch_left(repo)


@pytest.mark.parametrize("args, reason", [
    (("read_back.py",), "say what to try"),
    (("read_back.py", "--fix", "SS101"), "give CODE@LINE"),
    (("read_back.py", "--fix", "SS101@3"), "no SS101 at read_back.py:3 (SS101 is at line 15)"),
    (("read_back.py", "--patch", "missing.diff"), "no such file: missing.diff"),
    (("read_back.py", "--variant", "x", "--fix", "SS101@15"), "--variant goes with --finding"),
    (("no-such-run", "--finding", "input-bound"), "no run"),
])
def test_bad_input_is_one_line_and_exit_2_and_nothing_is_written(repo: Path, args, reason):
    before = state(repo)
    r = run_stepscope("try", *args, cwd=repo)
    assert r.returncode == 2, r.stderr
    assert reason in r.stderr and r.stderr.strip().count("\n") == 0, r.stderr
    assert state(repo) == before and not (repo / ".stepscope" / "runs").exists()


def test_a_patch_that_does_not_apply_is_refused_before_anything_runs(repo: Path):
    patch = repo / "stale.diff"
    patch.write_text("--- a/read_back.py\n+++ b/read_back.py\n@@ -11,1 +11,1 @@\n-    loss = other\n+    loss = new\n")
    r = run_stepscope("try", "read_back.py", "--patch", str(patch), cwd=repo)
    assert r.returncode == 2 and "the patch does not apply to read_back.py" in r.stderr, r.stderr
    assert not (repo / ".stepscope" / "runs").exists()
