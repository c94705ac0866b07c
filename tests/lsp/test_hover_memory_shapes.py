"""The hover through the real server and a real LSP client, for a run that recorded memory and input
shapes (`stepscope.profile.memory` / `shapes`) and for one that did not: a line's memory allocated per
step and its peak in the presenter's words, its operators by input shapes written as `[256, 512]`,
and nothing of either where they were not recorded. The runs are synthetic traces analysed as the
server's analysis child analyses a run (no torch)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from stepscope import jsonio
from stepscope.lsp import analysis_child

from ..analysis.kineto_synth import Synth
from .test_server import _initialize, _open

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "stepscope", "serve"])
TRAIN = "\n".join(f"x{i} = {i}" for i in range(1, 20)) + "\n"


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "train.py").write_text(TRAIN)
    await _initialize(lsp_client, ws, {"interpreter": sys.executable})
    lsp_client.ws = ws
    yield
    await lsp_client.shutdown_session()


def recorded_trace(*, memory: bool, shapes: bool) -> Synth:
    """Four 2 ms steps: line 3 runs `aten::linear` on a (256, 512) batch and allocates 4 MiB a step
    (with --memory), line 4 `aten::add` with a scalar."""
    s = Synth(devices=[])
    total = 0
    for k in range(4):
        base = k * 2000
        s.step(k + 1, base, 2000)
        s.region("ss:f0:3", base + 100, 600)
        s.op("aten::linear", base + 110, 200, dims=[[256, 512], [1024, 512], [1024]] if shapes else None)
        if memory:
            total += 4 << 20
            s.memory(base + 150, 4 << 20, total)
        s.region("ss:f0:4", base + 800, 300)
        s.op("aten::add", base + 810, 50, dims=[[256, 1024], []] if shapes else None,
             types=["float", "Scalar"] if shapes else None)
    return s


def shown_run(ws: Path, synth: Synth, run_id: str) -> None:
    """A run folder analysed as the server's analysis child does it, with the text it measured, and
    chosen as the run train.py shows (editor.json), as a run the editor made is after a restart."""
    run = ws / ".stepscope" / "runs" / run_id
    run.mkdir(parents=True)
    synth.write(run / "trace.json")
    (run / "files.json").write_text(json.dumps({"root": str(ws), "files": {"f0": "train.py"}}))
    jsonio.write_json(run / "report.json", analysis_child.analyse(run))
    (run / "sources.json").write_text(json.dumps({"version": 1, "files": {"train.py": TRAIN}}))
    (ws / ".stepscope" / "editor.json").write_text(json.dumps({"version": 1, "shown": {"train.py": run_id}}))


async def _hover_text(client: LanguageClient, line: int) -> str:
    uri = _open(client, client.ws / "train.py", TRAIN)
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=2)))
    assert hover is not None and hover.contents.kind == types.MarkupKind.Markdown
    return hover.contents.value.replace("\\", "")  # the Markdown's escapes, as a client renders them


async def test_the_hover_says_a_lines_memory_and_its_operators_input_shapes(client: LanguageClient):
    shown_run(client.ws, recorded_trace(memory=True, shapes=True), "20261201T120000Z-train-0a0a")
    said = await _hover_text(client, 2)
    assert ("- memory: 4.00 MiB allocated per step while it ran (frees not subtracted); "
            "peak 16.00 MiB of host memory in use while it ran") in said, said
    assert "**Input shapes** (calls per step × time per step, by operator and input shapes):" in said
    assert "- `aten::linear` [256, 512], [1024, 512], [1024] ×1 · 0.20 ms" in said
    assert '"float"' not in said and "[[" not in said  # never the JSON the trace recorded
    add = await _hover_text(client, 3)
    assert "- memory: 0 B allocated per step" in add  # recorded, and nothing allocated: a figure
    assert "- `aten::add` [256, 1024] ×1 · 0.05 ms" in add  # the scalar is no tensor input


async def test_a_run_that_recorded_neither_says_nothing_of_them(client: LanguageClient):
    shown_run(client.ws, recorded_trace(memory=False, shapes=False), "20261201T120000Z-train-0b0b")
    said = await _hover_text(client, 2)
    assert "wall:" in said
    assert "memory" not in said and "Input shapes" not in said and "0 B" not in said
