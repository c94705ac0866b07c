"""Quick fixes that change the code, through the real server and a real LSP client: each is offered
where it is safe, its edits applied as an editor applies them give code that parses and runs (with
real torch on the CPU) and computes what it computed before; where it is not safe it is not offered."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from .test_server import _diagnostics, _initialize, _open

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "stepscope", "serve"])


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "fixes ws"
    root.mkdir()
    return root


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, ws: Path):
    await _initialize(lsp_client, ws, {"interpreter": sys.executable})
    yield
    await lsp_client.shutdown_session()


def apply(text: str, edits: list[types.TextEdit]) -> str:
    """The edits applied to `text` as an editor does: all at once, positions in the original text."""
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)

    def at(pos: types.Position) -> int:
        return offsets[min(pos.line, len(lines))] + pos.character if pos.line < len(lines) else len(text)

    out = text
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        out = out[:at(edit.range.start)] + edit.new_text + out[at(edit.range.end):]
    return out


async def fixes_for(client: LanguageClient, ws: Path, name: str, text: str, code: str) -> dict[str, str]:
    """The fixes offered for the `code` diagnostic of `text`: title → the text after applying it."""
    path = ws / name
    path.write_text(text)
    uri = _open(client, path, text)
    found = [d for d in await _diagnostics(client, uri) if d.code == code]
    assert found, f"no {code} in {name}"
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=found[0].range,
        context=types.CodeActionContext(diagnostics=found)))
    # the fixes that edit (a "Try this fix (measure it)" beside one runs a command instead)
    return {a.title: apply(text, a.edit.changes[uri]) for a in actions
            if getattr(a, "edit", None) is not None and a.diagnostics[0].code == code}


def run_python(path: Path, text: str) -> str:
    path.write_text(text)
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120, cwd=path.parent)
    assert done.returncode == 0, done.stderr
    return done.stdout


ACCUMULATE = textwrap.dedent("""\
    import torch
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    running = 0.0
    for step in range(20):
        loss = model(torch.randn(4, 8)).pow(2).mean()
        loss.backward()
        opt.step()
        running += loss.item()
    print(f"{running / 20:.4f}")
    """)


@pytest.mark.torch
async def test_a_read_back_accumulated_in_the_step_is_moved_after_the_loop(client: LanguageClient, ws: Path):
    fixes = await fixes_for(client, ws, "acc.py", ACCUMULATE, "SS101")
    fixed = fixes["Accumulate on the device; read running once after the loop"]
    assert "running += loss.detach().double()\n" in fixed
    assert fixed.splitlines()[10] == 'running = running.item() if hasattr(running, "item") else running  ' \
                                     "# one read-back, after the loop"
    assert "Ignore SS101 on this line" in fixes  # still there, after the real fix
    # the program prints the same mean loss (added in float64 on the device, as Python added it)
    assert run_python(ws / "run_fixed.py", fixed) == run_python(ws / "run_before.py", ACCUMULATE)
    # and the fixed code no longer reads back inside the step
    assert not [d for d in await _diagnostics(client, _open(client, ws / "run_fixed.py", fixed)) if d.code == "SS101"]


async def test_a_read_back_used_in_the_step_is_not_moved(client: LanguageClient, ws: Path):
    used = ACCUMULATE.replace("    running += loss.item()\n",
                              "    running += loss.item()\n    if step % 10 == 0:\n        print(running)\n")
    assert list(await fixes_for(client, ws, "used.py", used, "SS101")) == ["Ignore SS101 on this line"]
    printed = ACCUMULATE.replace("    running += loss.item()\n", "    print(loss.item())\n")
    assert list(await fixes_for(client, ws, "printed.py", printed, "SS101")) == ["Ignore SS101 on this line"]


TIMED = textwrap.dedent("""\
    import time
    import torch
    model = torch.nn.Linear(64, 64)
    def timed():
        device = "cuda" if torch.cuda.is_available() else "cpu"
        model.to(device)
        x = torch.randn(32, 64, device=device)
        t0 = time.perf_counter()
        for _ in range(5):
            y = model(x)
        elapsed = time.perf_counter() - t0
        return elapsed
    print(timed() >= 0)
    """)


@pytest.mark.torch
async def test_a_timer_around_device_work_gets_a_synchronisation_before_each_clock_read(client: LanguageClient, ws: Path):
    fixes = await fixes_for(client, ws, "timed.py", TIMED, "SS201")
    fixed = fixes["Synchronise the device before each clock read"]
    lines = fixed.splitlines()
    sync = "if torch.cuda.is_available(): torch.cuda.synchronize()"
    assert lines[7:9] == [f"    {sync}", "    t0 = time.perf_counter()"]
    assert lines[11:13] == [f"    {sync}", "    elapsed = time.perf_counter() - t0"]
    assert run_python(ws / "timed_fixed.py", fixed) == "True\n"  # runs on a CPU-only machine too
    assert not [d for d in await _diagnostics(client, _open(client, ws / "timed_fixed.py", fixed)) if d.code == "SS201"]


async def test_no_synchronisation_is_offered_without_torch_imported(client: LanguageClient, ws: Path):
    text = TIMED.replace("import torch\n", "from torch import nn, randn, cuda\n").replace("torch.", "")
    fixes = await fixes_for(client, ws, "noimport.py", text, "SS201")
    assert "Synchronise the device before each clock read" not in fixes


PROFILED = textwrap.dedent("""\
    import torch
    from torch.profiler import profile, ProfilerActivity
    model = torch.nn.Linear(4, 4)
    with profile(activities=[ProfilerActivity.CPU],
                 record_shapes=False) as prof:
        for step in range(10):
            model(torch.randn(2, 4)).sum().backward()
    print(len(prof.key_averages()) > 0)
    """)


@pytest.mark.torch
async def test_a_profiler_without_a_schedule_gets_one_and_is_stepped(client: LanguageClient, ws: Path):
    fixes = await fixes_for(client, ws, "prof.py", PROFILED, "SS402")
    fixed = fixes["Add a schedule (wait 1, warm-up 1, active 3) and step it every iteration"]
    assert "record_shapes=False, schedule=torch.profiler.schedule(wait=1, warmup=1, active=3, repeat=1)) as prof:" \
        in fixed
    assert fixed.splitlines()[7] == "        prof.step()  # the schedule moves on once per step"
    assert run_python(ws / "prof_fixed.py", fixed) == "True\n"
    after = {d.code for d in await _diagnostics(client, _open(client, ws / "prof_fixed.py", fixed))}
    assert "SS402" not in after and "SS404" not in after and "SS403" not in after


async def test_no_schedule_where_it_would_record_nothing_or_skip_steps(client: LanguageClient, ws: Path):
    short = PROFILED.replace("range(10)", "range(3)")
    assert "Add a schedule" not in " ".join(await fixes_for(client, ws, "short.py", short, "SS402"))
    skipping = PROFILED.replace("        model(", "        if step == 2:\n            continue\n        model(")
    assert skipping != PROFILED
    assert "Add a schedule" not in " ".join(await fixes_for(client, ws, "skip.py", skipping, "SS402"))


async def test_a_constant_built_in_the_loop_is_hoisted(client: LanguageClient, ws: Path):
    text = textwrap.dedent("""\
        import torch
        model = torch.nn.Linear(4, 4)
        for step in range(1000):  # a training loop (ten passes or fewer is a warm-up)
            scale = torch.tensor([1.0, 2.0, 3.0, 4.0]).cuda()
            model(torch.randn(2, 4) * scale).sum().backward()
        """)
    fixes = await fixes_for(client, ws, "const.py", text, "SS501")
    fixed = fixes["Build this tensor once, before the loop"]
    compile(fixed, "const.py", "exec")
    assert fixed.index("torch.tensor([1.0, 2.0, 3.0, 4.0])") < fixed.index("for step in range(1000):")


async def test_a_fixed_trace_name_becomes_unique_per_run(client: LanguageClient, ws: Path):
    text = 'import torch\nprof = None\nprof.export_chrome_trace("traces/step.json")\n'
    fixes = await fixes_for(client, ws, "export.py", text, "SS405")
    fixed = fixes["Add the time and the process id to the trace name"]
    assert fixed.startswith("import os\nimport time\n")
    assert "f\"traces/step-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.json\"" in fixed
    compile(fixed, "export.py", "exec")
