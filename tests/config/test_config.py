"""`[tool.stepscope]`: one pyproject.toml per file and per run, read by one loader, and every problem
with it said on every surface (the rules' warnings, the report's notes, the editor's settings)."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from stepscope.analysis.findings import Thresholds, load_thresholds
from stepscope.analysis.report import analyze
from stepscope.config import FINDINGS_KEY, KNOWN_KEYS, RULES_KEYS, find_pyproject, read_table
from stepscope.rules import check_source, load_config
from stepscope.rules.config import config_from_table
from stepscope.settings import settings_for
from tests.analysis.kineto_synth import Synth, run_folder
from tests.conftest import REPO, run_stepscope

SYNC_LOOP = "import torch\nfor x in loader:\n    loss = model(x)\n    loss.backward()\n    print(loss.item())\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


# -- which pyproject.toml applies ----------------------------------------------------------------

def test_the_nearest_pyproject_above_a_file_applies_and_never_one_above_the_workspace(tmp_path: Path) -> None:
    outer = write(tmp_path / "pyproject.toml", "[tool.stepscope]\nignore = ['SS101']\n")
    ws = tmp_path / "ws"
    inner = write(ws / "pkg" / "pyproject.toml", "[tool.stepscope]\nsync-min-calls = 3\n")
    deep = write(ws / "pkg" / "sub" / "train.py", SYNC_LOOP)
    top = write(ws / "train.py", SYNC_LOOP)

    assert find_pyproject(deep, within=ws) == inner
    assert find_pyproject(top) == outer  # no workspace known: up to the file system's root, as ruff
    assert find_pyproject(top, within=ws) is None  # the workspace has none at or above this file
    assert load_config(top, within=ws).ignore == ()
    assert [d.code for d in check_source(SYNC_LOOP, str(top), load_config(top, within=ws))] == ["SS101"]
    assert [d.code for d in check_source(SYNC_LOOP, str(top), load_config(top))] == []
    # a file outside the workspace (opened from elsewhere) keeps its own project's configuration
    assert find_pyproject(tmp_path / "other.py", within=ws) == outer


def test_a_pyproject_without_a_stepscope_table_still_applies_with_the_defaults(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.stepscope]\nignore = ['SS101']\n")
    inner = write(tmp_path / "pkg" / "pyproject.toml", "[project]\nname = 'pkg'\n")
    table = read_table(tmp_path / "pkg" / "train.py")
    assert table.path == inner and dict(table.values) == {} and table.warnings == ()
    assert load_config(tmp_path / "pkg" / "train.py").ignore == ()


def test_an_edited_pyproject_is_read_again(tmp_path: Path) -> None:
    path = write(tmp_path / "pyproject.toml", "[tool.stepscope]\nsync-min-calls = 3\n")
    assert load_config(tmp_path).sync_min_calls == 3
    path.write_text("[tool.stepscope]\nsync-min-calls = 40\n", encoding="utf-8")  # another size
    assert load_config(tmp_path).sync_min_calls == 40


def test_the_rules_and_the_findings_of_one_file_read_the_same_pyproject(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", """\
        [tool.stepscope]
        sync-min-calls = 5
        [tool.stepscope.findings]
        dominant-op-share = 0.9
    """)
    inner = write(tmp_path / "pkg" / "pyproject.toml", """\
        [tool.stepscope]
        sync-min-calls = 3
        [tool.stepscope.findings]
        dominant-op-share = 0.7
    """)
    script = write(tmp_path / "pkg" / "train.py", SYNC_LOOP)
    settings = settings_for(script, tmp_path)
    assert settings.pyproject == inner
    assert settings.rules.sync_min_calls == 3 and settings.thresholds.dominant_op_share == 0.7
    assert load_thresholds(script, within=tmp_path)[0].dominant_op_share == 0.7
    assert load_thresholds(tmp_path, within=tmp_path)[0].dominant_op_share == 0.9
    assert settings.warnings == ()


def _dominant_op_run(tmp_path: Path, step_file: str) -> Path:
    """A CPU run whose aten::mm holds 65% of each 1 ms step (dominant-op fires at the default 0.6)."""
    s = Synth(devices=[])
    for k in range(5):
        t = k * 1000
        s.step(k + 1, t, 1000)
        s.region("ss:f0:3:next", t + 5, 20)
        s.op("aten::mm", t + 50, 650)
    ws = tmp_path / "ws"
    return run_folder(tmp_path, s, files={"f0": step_file},
                      scenario={"step": {"file": str(ws / step_file), "line": 2, "kind": "loop"}})


def test_a_run_takes_its_thresholds_from_the_pyproject_of_its_step_file(tmp_path: Path) -> None:
    run = _dominant_op_run(tmp_path, "pkg/train.py")
    ws = tmp_path / "ws"
    assert "dominant-op" in [f["kind"] for f in analyze([run])["findings"]]
    # the workspace's own pyproject.toml is farther from the step file than the package's
    write(ws / "pyproject.toml", "[tool.stepscope.findings]\ndominant-op-share = 0.5\n")
    write(ws / "pkg" / "pyproject.toml", "[tool.stepscope.findings]\ndominant-op-share = 0.9\n")
    assert "dominant-op" not in [f["kind"] for f in analyze([run])["findings"]]
    (ws / "pkg" / "pyproject.toml").unlink()
    write(ws / "pyproject.toml", "[tool.stepscope.findings]\ndominant-op-share = 0.9\n")
    assert "dominant-op" not in [f["kind"] for f in analyze([run])["findings"]]


def test_a_run_never_reads_a_pyproject_above_its_workspace(tmp_path: Path) -> None:
    run = _dominant_op_run(tmp_path, "train.py")
    write(tmp_path / "pyproject.toml", "[tool.stepscope.findings]\ndominant-op-share = 0.9\nbogus = 1\n")
    report = analyze([run])  # the workspace is tmp_path/ws: tmp_path's pyproject.toml is not its
    assert "dominant-op" in [f["kind"] for f in report["findings"]]
    assert not any("bogus" in note for note in report["notes"])


# -- what is wrong with it, on every surface -----------------------------------------------------

BROKEN = {
    "invalid TOML": ("[tool.stepscope\nselect = 1\n", "not read"),
    "not a table": ("[tool]\nstepscope = 3\n", "[tool.stepscope] is not a table"),
    "unknown key": ("[tool.stepscope]\nselct = ['SS1']\n", "tool.stepscope.selct is not a Stepscope setting"),
    "findings not a table": ("[tool.stepscope]\nfindings = 0.5\n", "[tool.stepscope.findings] is not a table"),
    "bad findings value": ("[tool.stepscope.findings]\nsync-min-share = 'high'\n", "sync-min-share = 'high'"),
    "bad rules value": ("[tool.stepscope]\nmodel-names = 'unet'\n", "model-names must be a list"),
}


@pytest.mark.parametrize("name", BROKEN)
def test_the_editor_gets_every_problem_once_in_one_line_naming_the_file(tmp_path: Path, name: str) -> None:
    text, words = BROKEN[name]
    path = write(tmp_path / "pyproject.toml", text)
    script = write(tmp_path / "train.py", SYNC_LOOP)
    settings = settings_for(script, tmp_path)
    assert settings.pyproject == path
    assert len(settings.warnings) == 1, settings.warnings
    (warning,) = settings.warnings
    assert words in warning and str(path) in warning and "\n" not in warning
    # what could not be used keeps its default: the rules still check the file
    assert [d.code for d in check_source(SYNC_LOOP, str(script), settings.rules)] == ["SS101"]
    assert settings.thresholds.sync_min_share == Thresholds().sync_min_share


@pytest.mark.parametrize("name", [n for n in BROKEN if n not in ("bad findings value", "findings not a table")])
def test_check_on_the_command_line_warns_about_the_file_and_the_rules_keys(tmp_path: Path, name: str) -> None:
    text, words = BROKEN[name]
    write(tmp_path / "pyproject.toml", text)
    write(tmp_path / "train.py", SYNC_LOOP)
    r = run_stepscope("check", "train.py", cwd=tmp_path)
    assert r.returncode == 1 and "SS101" in r.stdout, r.stderr  # the defaults still apply
    warnings = [line for line in r.stderr.splitlines() if line.startswith("stepscope: warning:")]
    assert len(warnings) == 1 and words in warnings[0], r.stderr


@pytest.mark.parametrize("name", [n for n in BROKEN if n != "bad rules value"])
def test_analyze_on_the_command_line_says_what_was_not_used_in_its_notes(tmp_path: Path, name: str) -> None:
    text, words = BROKEN[name]
    run = _dominant_op_run(tmp_path, "train.py")
    write(tmp_path / "ws" / "pyproject.toml", text)
    r = run_stepscope("analyze", str(run), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    notes = r.stdout.split("not observed / limits:")[1]
    assert sum(words in line for line in notes.splitlines()) == 1, notes
    assert "[dominant-op]" in r.stdout  # the default thresholds were used


def test_every_key_the_loader_knows_is_read_by_a_part() -> None:
    """The loader warns about keys no part reads; each part must read every key it is said to own."""
    assert set(KNOWN_KEYS) == {*RULES_KEYS, FINDINGS_KEY}
    for key in RULES_KEYS:
        config = config_from_table({key: object()})
        assert any(key in w for w in config.warnings), f"the rules do not read tool.stepscope.{key}"


# -- Python 3.10: no TOML reader in its standard library -----------------------------------------

def _python_310() -> Path | None:
    candidates = [Path(p) / "python3.10" for p in os.environ.get("PATH", "").split(os.pathsep)]
    candidates += sorted(Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")).glob("versions/3.10*/bin/python3"))
    for candidate in candidates:
        if candidate.is_file() and ".venv" not in candidate.parts:
            probe = subprocess.run([str(candidate), "-I", "-c", "import sys; print(*sys.version_info[:2])"],
                                   capture_output=True, text=True)
            if probe.returncode == 0 and probe.stdout.split() == ["3", "10"]:  # a pyenv shim may not run
                return candidate
    return None


PY310 = _python_310()
needs_310 = pytest.mark.skipif(PY310 is None, reason="no Python 3.10 interpreter on this machine (PATH, pyenv)")


def _check_on_310(cwd: Path, extra_path: list[Path]) -> subprocess.CompletedProcess:
    """`stepscope check train.py` from the source tree on a bare Python 3.10 (-I -S: no site-packages)."""
    path = [str(REPO / "server"), *map(str, extra_path)]
    code = f"import sys; sys.path[:0] = {path!r}; from stepscope.cli import main; sys.exit(main())"
    return subprocess.run([str(PY310), "-I", "-S", "-c", code, "check", "train.py"], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@needs_310
def test_python_310_with_tomli_reads_the_table(tmp_path: Path) -> None:
    import tomli

    # tomli's sources, as its pure-Python wheel installs them (compiled modules are for this interpreter only)
    lib = tmp_path / "lib" / "tomli"
    lib.mkdir(parents=True)
    for source in Path(tomli.__file__).parent.glob("*.py"):
        (lib / source.name).write_bytes(source.read_bytes())
    write(tmp_path / "pyproject.toml", "[tool.stepscope]\nignore = ['SS101']\n")
    write(tmp_path / "train.py", SYNC_LOOP)
    r = _check_on_310(tmp_path, [tmp_path / "lib"])
    assert r.returncode == 0 and "SS101" not in r.stdout, r.stdout + r.stderr
    assert "warning" not in r.stderr, r.stderr


@needs_310
def test_python_310_without_tomli_says_why_the_table_is_not_read(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.stepscope]\nignore = ['SS101']\n")
    write(tmp_path / "train.py", SYNC_LOOP)
    r = _check_on_310(tmp_path, [])
    assert r.returncode == 1 and "SS101" in r.stdout, r.stdout + r.stderr  # the defaults apply
    (warning,) = [line for line in r.stderr.splitlines() if "warning" in line]
    assert "[tool.stepscope] not read" in warning and "tomli" in warning and "3.10" in warning


def test_the_package_requires_tomli_on_python_310_only() -> None:
    from packaging.requirements import Requirement

    from stepscope.config import toml_reader

    project = toml_reader().loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    needed = {version: sorted(r.name for r in map(Requirement, project["dependencies"])
                              if r.marker is None or r.marker.evaluate({"python_version": version}))
              for version in ("3.10", "3.11", "3.14")}
    assert "tomli" in needed["3.10"]
    assert "tomli" not in needed["3.11"] and "tomli" not in needed["3.14"]
