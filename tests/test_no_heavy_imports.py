"""The language server and `stepscope check` never import torch (nor `check` the LSP stack).

A stand-in `torch` package placed first on the path writes a marker file the moment anything
imports it; the real server and the real CLI then do their normal work.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

REPO = Path(__file__).resolve().parent.parent


def _tripwire(folder: Path, marker: Path, *names: str) -> dict[str, str]:
    for name in names:
        pkg = folder / name
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text(
            f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\nraise ImportError('tripwire: {name}')\n")
    return {**os.environ, "PYTHONPATH": f"{folder}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def test_check_imports_neither_torch_nor_the_lsp_stack(tmp_path: Path):
    marker = tmp_path / "imported.txt"
    env = _tripwire(tmp_path / "trip", marker, "torch", "pygls", "lsprotocol")
    r = subprocess.run([sys.executable, "-m", "stepscope", "check", str(REPO / "examples" / "train_cpu.py")],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 1, r.stderr  # the example's planted sync is found
    assert "SS101" in r.stdout
    assert not marker.exists(), marker.read_text()


_SERVER_TMP = Path(os.environ.get("TMPDIR", "/tmp")) / f"stepscope-tripwire-{os.getpid()}"


@pytest.fixture(scope="module", autouse=True)
def _server_tripwire():
    shutil.rmtree(_SERVER_TMP, ignore_errors=True)
    _SERVER_TMP.mkdir(parents=True)
    _tripwire(_SERVER_TMP / "trip", _SERVER_TMP / "imported.txt", "torch")
    yield
    shutil.rmtree(_SERVER_TMP, ignore_errors=True)


@pytest_lsp.fixture(config=ClientServerConfig(
    server_command=[sys.executable, "-c",
                    f"import sys; sys.path.insert(0, {str(_SERVER_TMP / 'trip')!r}); "
                    "from stepscope.lsp.server import start_stdio; start_stdio()"]))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(capabilities=types.ClientCapabilities()))
    yield
    await lsp_client.shutdown_session()


async def test_language_server_serves_diagnostics_and_lenses_without_torch(client: LanguageClient):
    path = REPO / "examples" / "train_cpu.py"
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=path.read_text())))
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert lenses  # the server did real work
    for _ in range(100):
        if uri in client.diagnostics:
            break
        await asyncio.sleep(0.05)
    assert any(d.code == "SS101" for d in client.diagnostics[uri])
    assert not (_SERVER_TMP / "imported.txt").exists(), "the language server imported torch"
