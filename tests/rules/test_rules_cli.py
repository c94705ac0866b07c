"""`stepscope check` as CI and pre-commit run it: a real subprocess, real files, real git."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from ..conftest import run_stepscope

HERE = Path(__file__).resolve().parent
SARIF_SCHEMA = HERE / "data" / "sarif-schema-2.1.0.json"

SYNC_LOOP = (
    "import torch\n"
    "for x, y in loader:\n"
    "    loss = model(x).sum()\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
    "    total += loss.item()\n"
)
CLEAN = "import torch\nprint(torch.ones(2))\n"


def write(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_text_output_and_exit_codes(tmp_path: Path):
    write(tmp_path, "train.py", SYNC_LOOP)
    write(tmp_path, "clean.py", CLEAN)
    bad = run_stepscope("check", "train.py", cwd=tmp_path)
    assert bad.returncode == 1
    assert bad.stdout == ("train.py:6:14: SS101 when this loop runs on a GPU, `.item()` copies "
                          "the value to the host and waits for the device in every step of the "
                          "training loop (line 2); keep the value on the device, read it after "
                          "the loop or every N steps\n")
    ok = run_stepscope("check", "clean.py", cwd=tmp_path)
    assert (ok.returncode, ok.stdout) == (0, "")


def test_usage_errors_exit_2_with_one_line(tmp_path: Path):
    write(tmp_path, "train.py", SYNC_LOOP)
    for args in (("check", "missing.py"), ("check", "--select", "XX9", "train.py"),
                 ("check", "--format", "xml", "train.py")):
        done = run_stepscope(*args, cwd=tmp_path)
        assert done.returncode == 2, args
        assert "Traceback" not in done.stderr
        assert done.stderr.strip().splitlines()[-1].startswith("stepscope: ")


def test_select_and_ignore_by_code_and_prefix(tmp_path: Path):
    write(tmp_path, "t.py", SYNC_LOOP + "import time\nt0 = time.time()\nd = time.time() - t0\n")
    default = run_stepscope("check", "--format", "json", "t.py", cwd=tmp_path)
    assert {d["code"] for d in json.loads(default.stdout)["diagnostics"]} == {"SS101", "SS202"}
    only_sync = run_stepscope("check", "--format", "json", "--select", "SS1", "t.py", cwd=tmp_path)
    assert {d["code"] for d in json.loads(only_sync.stdout)["diagnostics"]} == {"SS101"}
    ignored = run_stepscope("check", "--ignore", "SS101,SS2", "t.py", cwd=tmp_path)
    assert (ignored.returncode, ignored.stdout) == (0, "")


def test_json_is_one_document_with_absolute_paths_and_fixes(tmp_path: Path):
    write(tmp_path, "train.py", SYNC_LOOP)
    done = run_stepscope("check", "--format", "json", "train.py", cwd=tmp_path)
    doc = json.loads(done.stdout)
    assert doc["files_checked"] == 1 and doc["errors"] == []
    (d,) = doc["diagnostics"]
    assert d["path"] == str((tmp_path / "train.py").resolve())
    assert (d["line"], d["col"], d["end_line"], d["end_col"]) == (6, 13, 6, 24)
    assert d["fixes"][-1]["title"] == "Ignore SS101 on this line"


def test_sarif_is_valid_against_the_official_schema(tmp_path: Path):
    write(tmp_path, "train.py", SYNC_LOOP + "prof.export_chrome_trace('trace.json')\n")
    write(tmp_path, "broken.py", b"x = '\xff\xfe'\n")
    done = run_stepscope("check", "--format", "sarif", "--select", "SS", ".", cwd=tmp_path)
    assert done.returncode == 2  # broken.py could not be checked
    sarif = json.loads(done.stdout)
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.validate(sarif, schema)
    results = sarif["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"SS101", "SS405"}
    sync = next(r for r in results if r["ruleId"] == "SS101")
    region = sync["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"], region["endColumn"]) == (6, 14, 25)
    (invocation,) = sarif["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "error" and "broken.py" in note["message"]["text"]


def test_directories_respect_gitignore(tmp_path: Path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(tmp_path, ".gitignore", "generated/\n")
    write(tmp_path, "src/train.py", SYNC_LOOP)
    write(tmp_path, "generated/copy.py", SYNC_LOOP)
    write(tmp_path, ".venv/lib/site.py", SYNC_LOOP)  # not ignored by git here, but hidden
    done = run_stepscope("check", "--format", "json", ".", cwd=tmp_path)
    paths = {Path(d["path"]).relative_to(tmp_path.resolve()).as_posix()
             for d in json.loads(done.stdout)["diagnostics"]}
    assert "src/train.py" in paths and "generated/copy.py" not in paths


def test_directories_outside_git_skip_hidden_and_virtualenvs(tmp_path: Path):
    project = tmp_path / "p"
    write(project, "train.py", SYNC_LOOP)
    write(project, ".hidden/t.py", SYNC_LOOP)
    write(project, "venv/pyvenv.cfg", "home = /usr\n")
    write(project, "venv/lib/t.py", SYNC_LOOP)
    write(project, "myenv/pyvenv.cfg", "home = /usr\n")
    write(project, "myenv/lib/t.py", SYNC_LOOP)
    write(project, "condaenv/conda-meta/history", "")
    write(project, "condaenv/lib/t.py", SYNC_LOOP)
    write(project, "node_modules/pkg/t.py", SYNC_LOOP)
    # the project's own code in folders named as environments and build outputs often are
    write(project, "build/make_model.py", SYNC_LOOP)
    write(project, "env/rollout.py", SYNC_LOOP)
    done = run_stepscope("check", "--format", "json", str(project), cwd=tmp_path)
    paths = {Path(d["path"]).relative_to(project.resolve()).as_posix()
             for d in json.loads(done.stdout)["diagnostics"]}
    files = json.loads(done.stdout)["files_checked"]
    assert (paths, files) == ({"train.py", "build/make_model.py", "env/rollout.py"}, 3)


def test_notebook_cells_are_checked_with_cell_numbers(tmp_path: Path):
    notebook = {
        "cells": [
            {"cell_type": "markdown", "source": ["# Training\n"]},
            {"cell_type": "code", "source": ["%matplotlib inline\n", "import torch\n"]},
            {"cell_type": "code", "source": ["for x, y in loader:\n",
                                             "    loss = model(x).sum()\n",
                                             "    loss.backward()\n",
                                             "    print(loss.item())\n"]},
            {"cell_type": "code", "source": "this is not python"},
        ],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }
    write(tmp_path, "nb.ipynb", json.dumps(notebook))
    done = run_stepscope("check", "nb.ipynb", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.startswith("nb.ipynb:cell 3:4:11: SS101 ")
    doc = json.loads(run_stepscope("check", "--format", "json", "nb.ipynb", cwd=tmp_path).stdout)
    assert doc["diagnostics"][0]["cell"] == 3


def test_unreadable_files_are_named_others_still_checked_and_exit_2(tmp_path: Path):
    write(tmp_path, "latin.py", b"x = '\xe9t\xe9'\n" + SYNC_LOOP.encode())
    write(tmp_path, "cookie.py", b"# -*- coding: latin-1 -*-\nx = '\xe9'\n" + SYNC_LOOP.encode())
    write(tmp_path, "nb.ipynb", b"{not json")
    done = run_stepscope("check", "latin.py", "cookie.py", "nb.ipynb", cwd=tmp_path)
    assert done.returncode == 2  # two files could not be checked: the result is incomplete
    assert done.stdout.startswith("cookie.py:8:")  # the readable one was checked all the same
    errors = [l for l in done.stderr.splitlines() if "not checked" in l]
    assert len(errors) == 2 and "latin.py" in errors[0] and "byte 0xe9" in errors[0]
    assert "1 problem in 1 file(s) checked; 2 file(s) could not be checked" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_file_that_does_not_parse_is_not_counted_as_checked(tmp_path: Path):
    half_typed = SYNC_LOOP + "def broken(:\n"
    write(tmp_path, "half_typed.py", half_typed)
    write(tmp_path, "train.py", SYNC_LOOP)
    done = run_stepscope("check", "half_typed.py", "train.py", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stdout.startswith("train.py:6:14: SS101")
    assert "half_typed.py" not in done.stdout  # nothing reported from the part above the error
    (error,) = [l for l in done.stderr.splitlines() if "not checked" in l]
    assert error == "stepscope: half_typed.py:7: does not parse (line 7: invalid syntax); not checked"
    doc = json.loads(run_stepscope("check", "--format", "json", ".", cwd=tmp_path).stdout)
    assert doc["files_checked"] == 1
    assert [(Path(e["path"]).name, e["line"]) for e in doc["errors"]] == [("half_typed.py", 7)]
    sarif = json.loads(run_stepscope("check", "--format", "sarif", ".", cwd=tmp_path).stdout)
    jsonschema.validate(sarif, json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))
    (note,) = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert note["locations"][0]["physicalLocation"]["region"] == {"startLine": 7}
    # even a file no rule could report anything on is refused when it does not parse
    write(tmp_path, "other/plain.py", "x = (\n")
    alone = run_stepscope("check", "other/plain.py", cwd=tmp_path)
    assert alone.returncode == 2 and "plain.py:1: does not parse" in alone.stderr


def test_a_notebook_cell_that_does_not_parse_is_named(tmp_path: Path):
    cells = [{"cell_type": "code", "source": SYNC_LOOP},
             {"cell_type": "code", "source": "def f(:\n    pass\n"},
             {"cell_type": "code", "source": "%time x = 1\n!ls\n"}]
    write(tmp_path, "nb.ipynb", json.dumps({"cells": cells, "nbformat": 4}))
    done = run_stepscope("check", "nb.ipynb", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout.startswith("nb.ipynb:cell 1:6:14: SS101")  # the other cells were checked
    assert "nb.ipynb:cell 2:1: does not parse (invalid syntax)" in done.stderr
    assert "cell 3" not in done.stderr


def test_pyproject_configuration_applies(tmp_path: Path):
    write(tmp_path, "pyproject.toml", '[tool.stepscope]\nignore = ["SS101"]\n'
                                      'per-file-ignores = { "legacy/*" = ["SS202"] }\n')
    write(tmp_path, "train.py", SYNC_LOOP)
    write(tmp_path, "legacy/old.py", "import time\nt0 = time.time()\nd = time.time() - t0\n")
    write(tmp_path, "new.py", "import time\nt0 = time.time()\nd = time.time() - t0\n")
    done = run_stepscope("check", "--format", "json", ".", cwd=tmp_path)
    got = {(Path(d["path"]).name, d["code"]) for d in json.loads(done.stdout)["diagnostics"]}
    assert got == {("new.py", "SS202")}
    # --select on the command line replaces the configured selection, ignores still apply
    again = run_stepscope("check", "--format", "json", "--select", "SS101", "train.py",
                          cwd=tmp_path)
    assert json.loads(again.stdout)["diagnostics"] == []


def test_broken_pyproject_warns_and_uses_defaults(tmp_path: Path):
    write(tmp_path, "pyproject.toml", "[tool.stepscope\nselect = \n")
    write(tmp_path, "train.py", SYNC_LOOP)
    done = run_stepscope("check", "train.py", cwd=tmp_path)
    assert done.returncode == 1 and "SS101" in done.stdout
    assert "stepscope: warning:" in done.stderr and "pyproject.toml" in done.stderr


def test_check_imports_neither_torch_nor_the_lsp_stack(tmp_path: Path):
    write(tmp_path, "train.py", SYNC_LOOP)
    probe = (
        "import sys\n"
        "from stepscope.cli import main\n"
        "code = main(['check', '--format', 'json', 'train.py'])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'pygls', 'lsprotocol'))\n"
        "sys.stderr.write('LOADED=' + ','.join(heavy) + '\\n')\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    loaded = [l for l in done.stderr.splitlines() if l.startswith("LOADED=")]
    assert loaded == ["LOADED="], done.stderr


@pytest.mark.parametrize("name", ["dir with space", "données"])
def test_paths_with_spaces_and_non_ascii(tmp_path: Path, name: str):
    write(tmp_path, f"{name}/train.py", SYNC_LOOP)
    done = run_stepscope("check", name, cwd=tmp_path)
    assert done.returncode == 1 and done.stdout.startswith(f"{name}/train.py:6:14: SS101")


def test_python_api_checks_paths_and_reports_unreadable_files(tmp_path: Path):
    from stepscope.rules import Config, check_files, check_paths

    write(tmp_path, "pkg/train.py", SYNC_LOOP)
    write(tmp_path, "pkg/bad.py", b"\xff\xfe\x00garbage")
    diags = check_paths([tmp_path / "pkg"], Config())
    assert [(Path(d.path).name, d.code, d.line) for d in diags] == [("train.py", "SS101", 6)]
    result = check_files([tmp_path / "pkg"], Config())
    assert result.files_checked == 1 and [Path(e.path).name for e in result.errors] == ["bad.py"]
    write(tmp_path, "pkg/half.py", "for x in loader:\n    loss.backward(\n")
    result = check_files([tmp_path / "pkg"], Config())
    assert result.files_checked == 1
    assert [(Path(e.path).name, e.line) for e in result.errors] == [("bad.py", None), ("half.py", 2)]
