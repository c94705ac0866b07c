"""`stepscope mcp --allow-run` through a real MCP client over stdio, running the CPU example: a
profile leads with the step timed without the profiler, its steps come as progress towards their total,
a measure
against HEAD gives a verdict in its words, both land in the history the CLI reads, a try measures a
quick fix without touching the files and a profile run's finding, a failing program is a tool error, and a cancelled call
stops its run."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.conftest import run_stepscope
from tests.mcp.client import session, text_of
from tests.measure.programs import commit

pytestmark = [pytest.mark.torch, pytest.mark.slow]

SHORT = ["--steps", "16"]
QUICK = {"passes": 4, "warmup": 2, "processes": 1}


@pytest.fixture
def repo(workspace: Path) -> Path:
    commit(workspace, "the examples")
    return workspace


async def test_profile_then_measure_against_head_recorded_in_the_cli_s_history(repo: Path):
    said: list[tuple[float, float | None, str]] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        said.append((progress, total, message or ""))

    def counted_up(said: list[tuple[float, float | None, str]], unit: str) -> None:
        """From 0 to the total, one by one (as the MCP spec asks, every value higher than the last)."""
        assert [p for p, _, _ in said] == list(range(len(said))), said
        assert len({total for _, total, _ in said}) == 1 and said[-1][0] == said[-1][1], said
        assert "starting train_cpu.py" in said[0][2] and unit in said[-1][2], said

    async with session(repo, allow_run=True) as client:
        profiled = await client.call_tool("profile", {"script": "train_cpu.py", "args": SHORT, "active": 3},
                                          progress_callback=progress)
        assert not profiled.is_error, text_of(profiled)
        counted_up(said, "step")
        # Stepscope's notes come with the result (the first run's: the step runs for real)
        assert any("the step runs for real" in note for note in profiled.structured_content["notes"])
        doc, text = profiled.structured_content, text_of(profiled)
        assert doc["ms_per_step"]["unprofiled"] > 0 and doc["ms_per_step"]["profiled"] > 0
        # the unprofiled figure leads; the profiled one is named as such, with the distortion beside it
        first = text.splitlines()[0]
        assert " ms/step without the profiler (median of " in first and "; profiled: " in first
        assert text.splitlines()[1].startswith("without the profiler: ")  # the distortion, in the CLI's words
        assert "distortion" in doc["distortion_words"]
        assert doc["top_lines"] and doc["run_id"] in text
        assert any(f["next_check"] for f in doc["findings"]), doc["findings"]
        assert "runs for real" in text
        assert (repo / ".stepscope" / "runs" / doc["run_id"] / "report.json").is_file()

        said.clear()
        measured = await client.call_tool("measure", {"script": "train_cpu.py", "args": SHORT, "against": "HEAD",
                                                      **QUICK}, progress_callback=progress)
        assert not measured.is_error, text_of(measured)
        counted_up(said, "pass 6/6 (timed)")
        assert said[-1][1] == 2 * (QUICK["passes"] + QUICK["warmup"])  # both sides' passes, warm-ups included
        assert any(message.startswith("revision HEAD") for _, _, message in said), said
        m = measured.structured_content
        assert m["ms_per_step_unprofiled"] > 0 and m["verdict"]
        assert m["verdict_words"] and m["verdict_words"] in text_of(measured)
        assert "without the profiler" in text_of(measured)

        listed = await client.call_tool("runs", {"action": "list"})
        ids = [r["id"] for r in listed.structured_content["runs"]]
        assert doc["run_id"] in ids and m["run_id"] in ids

        shown = await client.call_tool("runs", {"action": "show", "run_ids": [doc["run_id"]]})
        assert not shown.is_error and doc["run_id"] in text_of(shown)

        baseline = next(r for r in ids if "-rev-" in r)  # the revision's side of the measure
        compared = await client.call_tool("runs", {"action": "compare", "run_ids": [baseline, m["run_id"]]})
        assert not compared.is_error, text_of(compared)
        assert compared.structured_content["verdict"] and "ratio" in text_of(compared)
    # the CLI reads the same history
    cli = run_stepscope("runs", "list", "--json", cwd=repo)
    assert {doc["run_id"], m["run_id"]} <= {r["id"] for r in json.loads(cli.stdout)["runs"]}
    assert sorted(p.name for p in repo.iterdir()) == sorted([".git", ".stepscope", *(p.name for p in repo.glob("*.py"))])


async def test_a_cancelled_measure_stops_the_program_and_the_server_goes_on(repo: Path):
    async with session(repo, allow_run=True) as client:
        with anyio.move_on_after(8):  # the client gives up: the SDK sends notifications/cancelled
            await client.call_tool("measure", {"script": "train_cpu.py", "args": ["--steps", "1000000"],
                                               "passes": 100000, "warmup": 0, "processes": 1})
        with anyio.fail_after(60):
            while not _ended(repo):
                await anyio.sleep(0.5)
        assert len((await client.list_tools()).tools) == 6
    statuses = [json.loads(p.read_text()) for p in (repo / ".stepscope" / "runs").glob("*/status.json")]
    assert statuses and all(s.get("status") == "cancelled" for s in statuses), statuses


def _ended(repo: Path) -> bool:
    runs = list((repo / ".stepscope" / "runs").glob("*"))
    return bool(runs) and all((r / "status.json").is_file() for r in runs)


async def test_try_fix_measures_a_quick_fix_on_a_scratch_copy_and_leaves_the_files_alone(repo: Path):
    before = {p.name: p.read_bytes() for p in repo.glob("*.py")}
    line = next(i for i, text in enumerate((repo / "train_cpu.py").read_text().splitlines(), 1) 
                if "running += loss.item()" in text)
    async with session(repo, allow_run=True) as client:
        tried = await client.call_tool("try_fix", {"target": "train_cpu.py", "fix": f"SS101@{line}", "args": SHORT,
                                                   "passes": 4, "processes": 1})
    assert not tried.is_error, text_of(tried)
    entry = tried.structured_content["tries"][0]
    assert entry["verdict"] and entry["verdict_words"] in text_of(tried) and entry["headline"]
    assert "runs for real" in text_of(tried)
    assert {p.name: p.read_bytes() for p in repo.glob("*.py")} == before
    scratch = repo / ".stepscope" / "scratch"
    assert not scratch.exists() or not any(scratch.iterdir())


CRASHES = '''import torch

for step in range(8):
    loss = torch.ones(2).sum()
    if step == 0:
        raise RuntimeError("the batch is empty")
'''


async def test_a_program_that_fails_is_a_tool_error_with_its_reason(repo: Path):
    (repo / "crashes.py").write_text(CRASHES)
    async with session(repo, allow_run=True) as client:
        result = await client.call_tool("profile", {"script": "crashes.py", "line": 3})
        assert result.is_error
        assert "raised RuntimeError at crashes.py:6" in text_of(result) and "the batch is empty" in text_of(result)
        assert len((await client.list_tools()).tools) == 6


async def test_try_fix_tries_a_profile_run_s_finding(repo: Path):
    async with session(repo, allow_run=True) as client:
        profiled = await client.call_tool("profile", {"script": "train_cpu.py", "args": SHORT, "active": 3})
        run_id = profiled.structured_content["run_id"]
        assert "input-bound" in [f["kind"] for f in profiled.structured_content["findings"]]
        # the run says the step and the program's arguments
        tried = await client.call_tool("try_fix", {"target": run_id, "finding": "input-bound",
                                                   "variant": ["workers-2"], "passes": 4, "processes": 1})
    assert not tried.is_error, text_of(tried)
    assert [t["name"] for t in tried.structured_content["tries"]] == ["workers-2"]
    assert tried.structured_content["tries"][0]["verdict_words"] in text_of(tried)
