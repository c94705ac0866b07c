"""`stepscope mcp` through a real MCP client over stdio: the tools, their errors, the refusal of
the tools that run code without --allow-run. None of these runs torch."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO
from tests.mcp.client import session, text_of

TRACE = REPO / "tests" / "data" / "traces" / "scenarios" / "clean_mlp"


async def test_the_tools_are_listed_with_their_arguments(workspace: Path):
    async with session(workspace) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {"profile", "measure", "try_fix", "analyze", "check", "runs"}
    assert "script" in tools["profile"].input_schema["properties"]
    assert "against" in tools["measure"].input_schema["properties"]
    assert "runs for real" in tools["profile"].description


async def test_tools_that_run_code_are_refused_without_allow_run_and_write_nothing(workspace: Path):
    async with session(workspace) as client:
        for name, arguments in (("profile", {"script": "train_cpu.py"}),
                                ("measure", {"script": "train_cpu.py", "against": "HEAD"}),
                                ("try_fix", {"target": "train_cpu.py", "fix": "SS101@75"})):
            result = await client.call_tool(name, arguments)
            assert result.is_error, name
            assert "--allow-run" in text_of(result) and name in text_of(result)
    assert not (workspace / ".stepscope").exists()


async def test_analyze_a_trace_gives_the_report_s_summary(workspace: Path):
    trace = workspace / "clean_mlp"
    shutil.copytree(TRACE, trace)
    async with session(workspace) as client:
        result = await client.call_tool("analyze", {"trace": "clean_mlp/trace.json.gz"})
    assert not result.is_error, text_of(result)
    doc = result.structured_content
    assert doc["ms_per_step"]["profiled"] > 0
    assert doc["ms_per_step"]["unprofiled"] is None  # a trace alone: nothing was timed without the profiler
    assert text_of(result).startswith("under the profiler: ")
    assert doc["top_lines"] and all(line["label"] for line in doc["top_lines"])


async def test_bad_arguments_are_tool_errors_and_the_server_goes_on(workspace: Path):
    async with session(workspace, allow_run=True) as client:
        for name, arguments, words in (
                ("analyze", {"trace": "nowhere.json"}, "no such trace"),
                ("analyze", {"trace": "train_cpu.py"}, ""),  # not a trace: the command's own reason
                ("profile", {"script": "train_cpu.py", "line": 0}, "line"),  # out of the schema
                ("profile", {"script": "../outside.py"}, "inside the workspace"),
                ("profile", {"script": "train_cpu.py", "line": 3, "function": "main"}, "not both"),
                ("runs", {"action": "show"}, "takes 1 run id"),
                ("runs", {"action": "show", "run_ids": ["no-such-run"]}, ""),
                ("runs", {"action": "show", "run_ids": ["--root=/"]}, "cannot start with '-'"),
                ("try_fix", {"target": "--apply", "finding": "input-bound"}, "cannot start with '-'"),
                ("measure", {"script": "train_cpu.py", "against": "--out=/tmp/x", "timeout_s": 30}, ""),
                ("check", {"paths": ["missing.py"]}, "missing.py"),
                ("check", {"paths": ["train_cpu.py"], "select": ["XX9"]}, "unknown rule code"),
                ("try_fix", {"target": "train_cpu.py"}, "exactly one")):
            result = await client.call_tool(name, arguments)
            assert result.is_error, (name, arguments, text_of(result))
            assert words in text_of(result) and text_of(result).strip(), (name, text_of(result))
        assert len((await client.list_tools()).tools) == 6  # still serving


async def test_check_gives_the_rules_diagnostics(workspace: Path):
    async with session(workspace) as client:
        result = await client.call_tool("check", {"paths": ["train_cpu.py"]})
    assert not result.is_error, text_of(result)
    codes = [d["code"] for d in result.structured_content["diagnostics"]]
    assert "SS101" in codes
    assert "SS101" in text_of(result)


async def test_runs_lists_an_empty_history_without_creating_one(workspace: Path):
    async with session(workspace) as client:
        result = await client.call_tool("runs", {})
    assert not result.is_error, text_of(result)
    assert result.structured_content["runs"] == []
    assert not (workspace / ".stepscope").exists()


def test_without_the_sdk_one_line_says_what_to_install(workspace: Path):
    # `mcp` set to None in sys.modules: importing it fails as it does where it is not installed
    r = subprocess.run([sys.executable, "-c", "import sys; sys.modules['mcp'] = None; from stepscope.cli import main; "
                        "sys.exit(main(['mcp']))"], cwd=workspace, capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(REPO / "server")})
    assert r.returncode == 2
    assert r.stderr == "stepscope: the MCP server needs the `mcp` package: pip install 'stepscope[mcp]'\n"


async def test_the_server_reads_traces_checks_code_and_lists_runs_without_torch_or_the_lsp_stack(workspace: Path):
    marker = workspace.parent / "imported.txt"
    trip = workspace.parent / "trip"
    for name in ("torch", "pygls", "lsprotocol"):  # each writes the marker the moment it is imported
        (trip / name).mkdir(parents=True)
        (trip / name / "__init__.py").write_text(
            f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\nraise ImportError('tripwire: {name}')\n")
    shutil.copytree(TRACE, workspace / "clean_mlp")
    async with session(workspace, path_first=trip) as client:
        for name, arguments in (("check", {"paths": ["train_cpu.py"]}), ("analyze", {"trace": "clean_mlp"}),
                                ("runs", {})):
            result = await client.call_tool(name, arguments)
            assert not result.is_error, (name, text_of(result))
    assert not marker.exists(), marker.read_text()
