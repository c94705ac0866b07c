"""The agent cannot import the rest of Stepscope, by construction: bootstrap.py loads its folder as
a package of its own, and the agent runs (and profiles) where `stepscope` is not importable at all.

A stand-in `stepscope` package placed first on the path writes a marker file the moment anything
imports it, and refuses to load."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stepscope.agent import bootstrap
from stepscope.capture.request import CaptureRequest
from stepscope.capture.runner import run_capture

AGENT = Path(bootstrap.__file__).resolve().parent
pytestmark = pytest.mark.torch


def _tripwire(tmp_path: Path) -> tuple[str, Path]:
    folder, marker = tmp_path / "trip", tmp_path / "imported.txt"
    (folder / "stepscope").mkdir(parents=True)
    (folder / "stepscope" / "__init__.py").write_text(
        f"open({str(marker)!r}, 'a').write('stepscope\\n')\nraise ImportError('tripwire: stepscope')\n")
    return str(folder), marker


def test_every_agent_module_loads_where_stepscope_cannot_be_imported(tmp_path: Path):
    trip, marker = _tripwire(tmp_path)
    modules = sorted(p.stem for p in AGENT.glob("*.py") if p.stem not in ("__init__", "bootstrap"))
    probe = textwrap.dedent(f"""\
        import importlib, importlib.util, sys
        spec = importlib.util.spec_from_file_location("boot", {str(AGENT / "bootstrap.py")!r})
        boot = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(boot)
        boot.load_agent()
        for name in {modules!r}:
            importlib.import_module(boot.PACKAGE + "." + name)
        try:
            import stepscope
        except ImportError:
            pass
        else:
            raise SystemExit("stepscope is importable here: the test proves nothing")
        print(sorted(m for m in sys.modules if m.startswith(("stepscope", boot.PACKAGE))))
        """)
    r = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": trip})
    assert r.returncode == 0, r.stderr[-2000:]
    loaded = eval(r.stdout)  # noqa: S307 (our own printed list)
    assert {f"{bootstrap.PACKAGE}.{m}" for m in modules} <= set(loaded)
    assert not [m for m in loaded if m.startswith("stepscope")]
    assert marker.read_text() == "stepscope\n"  # only the probe's own attempt above


def test_a_profile_runs_where_stepscope_cannot_be_imported(tmp_path: Path):
    trip, marker = _tripwire(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    script = ws / "train.py"
    script.write_text(textwrap.dedent("""\
        import torch
        model = torch.nn.Linear(8, 8)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(12):
            loss = model(torch.randn(4, 8)).sum()
            loss.backward()
            opt.step()
        """))
    req = CaptureRequest(root=ws, target_file=script, target_line=4, python=sys.executable, cwd=ws,
                         env={"PYTHONPATH": trip})
    result = run_capture(req)
    log = (result.run_dir / "program.log").read_text()
    assert result.ok, (result.reason, log[-2000:])
    assert [p.name for p in result.traces] == ["trace.json"]
    assert not marker.exists(), log[-2000:]
