"""The built .vsix as a user receives it: what it carries, and its server on every CPython
3.10+ this machine has, each a bare interpreter with nothing installed.

Needs the .vsix from tools/build-vsix.sh (`make test` builds it first).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from stepscope.agent import protocol

from .codeserver import REPO, vsix_path

pytestmark = pytest.mark.vscode

EXAMPLE = REPO / "examples" / "train_cpu.py"
SUPPORTED_MINORS = range(10, 15)


@pytest.fixture(scope="module")
def vsix() -> Path:
    path = vsix_path()
    if not path.exists():
        pytest.fail(f"{path} is missing: run tools/build-vsix.sh", pytrace=False)
    return path


@pytest.fixture(scope="module")
def unpacked(vsix: Path, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("vsix")
    with zipfile.ZipFile(vsix) as archive:
        archive.extractall(root)
    return root / "extension"


def test_vsix_carries_client_server_and_native_libraries_only(vsix: Path) -> None:
    with zipfile.ZipFile(vsix) as archive:
        names = archive.namelist()
        manifest = archive.read("extension.vsixmanifest").decode()
        package = json.loads(archive.read("extension/package.json"))

    assert 'TargetPlatform="linux-x64"' in manifest
    assert package["main"] == "./extension/dist/extension.js"
    assert package["capabilities"]["untrustedWorkspaces"]["supported"] == "limited"
    for required in (
        "extension/extension/dist/extension.js",
        "extension/panel/dist/panel.js",  # the trace panel's webview, and its stylesheet
        "extension/panel/dist/panel.css",
        "extension/bundled/tool/server.py",
        "extension/bundled/libs/stepscope/lsp/server.py",
        "extension/bundled/libs/pygls/__init__.py",
        "extension/bundled/libs/lsprotocol/types.py",
        "extension/bundled/libs/cattrs/__init__.py",
        "extension/bundled/libs/exceptiongroup/__init__.py",  # cattrs needs it on 3.10
        "extension/bundled/libs/tomli/_parser.py",  # [tool.stepscope] on 3.10
        "extension/bundled/libs/stepscope/trace/_columns.abi3.so",  # one build for every CPython 3.10+
        "extension/bundled/libs/stepscope/trace/_rows.abi3.so",
        "extension/bundled/libs/stepscope/analysis/_nesting.abi3.so",
        "extension/bundled/libs/stepscope/analysis/report.schema.json",  # the report's contract, shipped
        "extension/bundled/libs/stepscope/analysis/_timeline.abi3.so",
        "extension/bundled/libs/stepscope/analysis/timeline.schema.json",  # the trace panel\'s, shipped
    ):
        assert required in names, f"{required} is not in the .vsix"
    for minor in SUPPORTED_MINORS:
        for module, so in (("orjson", "orjson"), ("msgspec", "_core"), ("zlib_ng", "zlib_ng")):
            pattern = re.compile(rf"extension/bundled/native/cp3{minor}/{module}/{so}\.cpython-3{minor}-x86_64-linux-gnu\.so")
            assert any(pattern.fullmatch(n) for n in names), f"no {module} for CPython 3.{minor}"
    unwanted = [n for n in names if "node_modules/" in n or n.endswith((".ts", ".map", ".pyc")) or "/tests/" in n]
    assert unwanted == [], unwanted[:10]
    # No compiled library and no torch among the pure-Python libraries: they would be the wrong build.
    assert not any(n.startswith(("extension/bundled/libs/orjson", "extension/bundled/libs/msgspec", "extension/bundled/libs/zlib_ng",
                                 "extension/bundled/libs/torch")) for n in names)
    # The pure-Python libraries are pure: a library compiled for the build's CPython serves no other.
    compiled = [n for n in names if n.startswith("extension/bundled/libs/") and n.endswith(".so")
                and not n.startswith("extension/bundled/libs/stepscope/")]
    assert compiled == [], compiled


def available_pythons() -> dict[int, Path]:
    """One CPython per supported minor version found here: PATH, then pyenv's versions."""
    found: dict[int, Path] = {}
    candidates = [Path(sys.base_prefix) / "bin" / "python3"]
    for minor in SUPPORTED_MINORS:
        for folder in os.environ.get("PATH", "").split(os.pathsep):
            candidates.append(Path(folder) / f"python3.{minor}")
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates += sorted(pyenv_root.glob("versions/3.*/bin/python3"))
    for candidate in candidates:
        if not candidate.is_file() or ".venv" in candidate.parts:
            continue
        probe = subprocess.run(
            [str(candidate), "-I", "-c", "import sys; print(sys.implementation.name, *sys.version_info[:2])"],
            capture_output=True, text=True,
        )
        parts = probe.stdout.split()
        if probe.returncode == 0 and len(parts) == 3 and parts[0] == "cpython" and int(parts[2]) in SUPPORTED_MINORS:
            found.setdefault(int(parts[2]), candidate)
    return found


class StdioLspClient:
    """Just enough of an LSP client to start a server and read its diagnostics."""

    def __init__(self, command: list[str], cwd: Path):
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        self.process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.next_id = 0

    def send(self, method: str, params: dict, request: bool = False) -> None:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self.next_id += 1
            message["id"] = self.next_id
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def receive(self) -> dict:
        length = None
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise AssertionError(f"the server exited: {self.process.stderr.read().decode()[-2000:]}")
            if line in (b"\r\n", b"\n"):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(self.process.stdout.read(length))

    def wait_for(self, predicate, limit: int = 200) -> dict:
        for _ in range(limit):
            message = self.receive()
            if predicate(message):
                return message
        raise AssertionError("the expected message never came")

    def close(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            stream.close()


def test_bundled_server_checks_code_on_every_supported_python_here(unpacked: Path, tmp_path: Path) -> None:
    pythons = available_pythons()
    assert pythons, "no CPython 3.10+ found on this machine"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    source = EXAMPLE.read_text()
    item_line = next(i for i, line in enumerate(source.splitlines()) if "running += loss.item()" in line)
    uri = (workspace / "train_cpu.py").as_uri()

    checked = []
    for minor, python in sorted(pythons.items()):
        client = StdioLspClient([str(python), str(unpacked / "bundled" / "tool" / "server.py")], workspace)
        try:
            client.send("initialize", {"processId": os.getpid(), "rootUri": workspace.as_uri(),
                                       "capabilities": {}}, request=True)
            client.wait_for(lambda m: m.get("id") == 1)
            client.send("initialized", {})
            client.send("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": "python", "version": 1, "text": source}})
            published = client.wait_for(
                lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri)
        finally:
            client.close()
        diagnostics = published["params"]["diagnostics"]
        ss101 = [d for d in diagnostics if d.get("code") == "SS101"]
        assert ss101, f"Python 3.{minor} ({python}): no SS101 in {diagnostics}"
        assert ss101[0]["range"]["start"]["line"] == item_line
        assert ss101[0]["source"] == "stepscope"
        checked.append(f"3.{minor}")
    print(f"bundled server checked on Python {', '.join(checked)}")


def test_bundled_server_reads_the_projects_settings_on_every_supported_python_here(unpacked: Path, tmp_path: Path) -> None:
    # Python 3.10 has no TOML reader of its own: the bundle's tomli reads [tool.stepscope] there
    pythons = available_pythons()
    assert pythons, "no CPython 3.10+ found on this machine"
    workspace = tmp_path / "ws"
    (workspace / "quiet").mkdir(parents=True)
    (workspace / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (workspace / "quiet" / "pyproject.toml").write_text("[tool.stepscope]\nignore = ['SS101']\n")
    source = EXAMPLE.read_text()
    checked, quiet = (workspace / "train_cpu.py").as_uri(), (workspace / "quiet" / "train_cpu.py").as_uri()

    for minor, python in sorted(pythons.items()):
        client = StdioLspClient([str(python), str(unpacked / "bundled" / "tool" / "server.py")], workspace)
        codes: dict[str, list] = {}
        try:
            client.send("initialize", {"processId": os.getpid(), "rootUri": workspace.as_uri(),
                                       "capabilities": {}}, request=True)
            client.wait_for(lambda m: m.get("id") == 1)
            client.send("initialized", {})
            for uri in (checked, quiet):
                client.send("textDocument/didOpen", {"textDocument": {
                    "uri": uri, "languageId": "python", "version": 1, "text": source}})
                published = client.wait_for(
                    lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri)
                codes[uri] = [d.get("code") for d in published["params"]["diagnostics"]]
        finally:
            client.close()
        assert "SS101" in codes[checked], f"Python 3.{minor} ({python}): {codes[checked]}"
        assert "SS101" not in codes[quiet], f"Python 3.{minor} ({python}) did not read [tool.stepscope]"


def test_bundled_compiled_modules_analyse_traces_on_every_supported_python_here(unpacked: Path) -> None:
    # the compiled modules are built once for the stable ABI: each CPython must load them
    trace = REPO / "tests" / "data" / "traces" / "h200_async" / "trace.json.gz"
    bundled = unpacked / "bundled"
    probe = (
        "import sys; sys.path[:0] = sys.argv[1:3]\n"
        "from stepscope.trace import model, reader\n"
        "from stepscope.analysis import nesting, report\n"
        "assert reader.ColumnScanner is not None, 'the column scanner did not load'\n"
        "assert model._rows_in is not None, 'the row indexes did not load'\n"
        "assert nesting._compiled is not None, 'the nesting kernel did not load'\n"
        "r = report.analyze([sys.argv[3]])\n"
        "print(r['ms_per_step'], r['evidence']['ops'][:3])\n"
    )
    results = set()
    for minor, python in sorted(available_pythons().items()):
        run = subprocess.run([str(python), "-I", "-c", probe, str(bundled / "libs"),
                              str(bundled / "native" / f"cp3{minor}"), str(trace)], capture_output=True, text=True)
        assert run.returncode == 0, f"Python 3.{minor}: {run.stderr[-1500:]}"
        results.add(run.stdout)
    assert len(results) == 1  # the same trace on every version


def test_bundled_server_profiles_a_step_with_its_own_agent(unpacked: Path, tmp_path: Path) -> None:
    # The server's side runs on a bare interpreter from bundled/ only; the program runs in an
    # interpreter with torch where a stand-in `stepscope` refuses to load: the bundled agent
    # (bundled/libs/stepscope/agent, loaded as a package of its own) needs nothing else of Stepscope.
    pythons = available_pythons()
    assert pythons, "no CPython 3.10+ found on this machine"
    minor, bare = max(pythons.items())
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "train_cpu.py").write_text(EXAMPLE.read_text())
    trip = tmp_path / "trip" / "stepscope"
    trip.mkdir(parents=True)
    (trip / "__init__.py").write_text("raise ImportError('tripwire: the agent imported stepscope')\n")
    bundled = unpacked / "bundled"
    cli = ("import sys; sys.path[:0] = [sys.argv.pop(1), sys.argv.pop(1)]\n"
           "from stepscope.cli import main\n"
           "sys.exit(main())\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    r = subprocess.run([str(bare), "-I", "-c", cli, str(bundled / "libs"), str(bundled / "native" / f"cp3{minor}"),
                        "profile", "train_cpu.py", "--python", sys.executable, "--active", "3", "--json"],
                       cwd=workspace, capture_output=True, text=True, timeout=600,
                       env={**env, "PYTHONPATH": str(trip.parent)})
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout)
    assert len(report["steps"]) == 3 and report["ms_per_step"] > 0
    assert report["scenario"]["program"]["python"] == sys.executable
    spec = json.loads((Path(report["traces"][0]).parent / "spec.json").read_text())
    assert spec["mode"] == "profile" and spec["schema_version"] == protocol.SCHEMA_VERSION


async def test_bundled_mcp_server_runs_the_bundled_stepscope_s_commands(unpacked: Path, tmp_path: Path) -> None:
    """`server.py mcp`, as the editor's agents start it: the bundle's Stepscope serves the tools, and
    each tool's command (a child process) imports the bundle's Stepscope and compiled modules too,
    never the interpreter's own, which here are stand-ins that refuse to load. Only the `mcp` SDK
    comes from the interpreter's environment."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from tests.mcp.client import text_of

    marker = tmp_path / "imported.txt"
    trip = tmp_path / "trip"
    for name in ("stepscope", "orjson", "msgspec"):
        (trip / name).mkdir(parents=True)
        (trip / name / "__init__.py").write_text(
            f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\nraise ImportError('tripwire: {name}')\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "train_cpu.py").write_text(EXAMPLE.read_text())
    shutil.copytree(REPO / "tests" / "data" / "traces" / "scenarios" / "clean_mlp", workspace / "clean_mlp")
    server = StdioServerParameters(
        command=sys.executable, args=[str(unpacked / "bundled" / "tool" / "server.py"), "mcp", f"--root={workspace}"],
        cwd=str(workspace), env={"PYTHONPATH": str(trip)})
    async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        assert len((await client.list_tools()).tools) == 6
        analysed = await client.call_tool("analyze", {"trace": "clean_mlp"})
        assert not analysed.is_error, text_of(analysed)
        assert analysed.structured_content["ms_per_step"]["profiled"] > 0
        checked = await client.call_tool("check", {"paths": ["train_cpu.py"]})
        assert any(d["code"] == "SS101" for d in checked.structured_content["diagnostics"]), text_of(checked)
        refused = await client.call_tool("profile", {"script": "train_cpu.py"})  # no --allow-run given
        assert refused.is_error and "--allow-run" in text_of(refused)
    assert not marker.exists(), marker.read_text()
