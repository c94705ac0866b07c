"""`stepscope check --fix` and `--diff` through the real command: what is written, what is
printed, the exit codes, and the files that are never touched."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from ..conftest import run_stepscope
from .test_rules_cli import write

# a constant only read (hoisted), an accumulator (built on the device), and a read-back printed
# every step (SS101, no fix: the value is needed in the step)
TRAIN = (
    "import torch\n"
    "device = torch.device('cpu')\n"
    "model = torch.nn.Linear(3, 1)\n"
    "for x in batches:\n"
    "    weights = torch.tensor([1.0, 2.0, 3.0], device=device)\n"
    "    loss_sum = torch.tensor(0.0, device=device)\n"
    "    loss_sum += model(x * weights).mean()\n"
    "    loss_sum.backward()\n"
    "    print(loss_sum.item())\n"
)
FIXED = (
    "import torch\n"
    "device = torch.device('cpu')\n"
    "model = torch.nn.Linear(3, 1)\n"
    "const_tensor = torch.tensor([1.0, 2.0, 3.0], device=device)\n"
    "for x in batches:\n"
    "    weights = const_tensor\n"
    "    loss_sum = torch.zeros((), device=device)\n"
    "    loss_sum += model(x * weights).mean()\n"
    "    loss_sum.backward()\n"
    "    print(loss_sum.item())\n"
)


def test_fix_writes_the_fixes_says_what_it_fixed_and_what_remains(tmp_path: Path):
    path = write(tmp_path, "train.py", TRAIN)
    os.chmod(path, 0o640)
    done = run_stepscope("check", "--fix", "train.py", cwd=tmp_path)
    assert path.read_text(encoding="utf-8") == FIXED
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]  # no temporary file left
    lines = done.stdout.splitlines()
    assert lines[:2] == ["train.py:5:15: SS501 fixed: Build this tensor once, before the loop",
                         "train.py:6:16: SS501 fixed: Create this value on the device: torch.zeros((), device=device)"]
    assert len(lines) == 3 and lines[2].startswith("train.py:10:") and " SS101 " in lines[2]  # where it is now
    assert done.stderr == "fixed 2 problems in 1 file(s); 1 problem remains in 1 file(s) checked\n"
    assert done.returncode == 1  # a finding remains, as ruff says it
    again = run_stepscope("check", "--fix", "--ignore", "SS101", "train.py", cwd=tmp_path)
    assert (again.returncode, again.stdout) == (0, "")
    assert path.read_text(encoding="utf-8") == FIXED


def test_diff_prints_the_fixes_and_writes_nothing(tmp_path: Path):
    path = write(tmp_path, "train.py", TRAIN)
    done = run_stepscope("check", "--diff", "train.py", cwd=tmp_path)
    assert path.read_text(encoding="utf-8") == TRAIN
    assert done.returncode == 1
    assert done.stdout.startswith("--- train.py\n+++ train.py\n@@ ")
    assert "+const_tensor = torch.tensor([1.0, 2.0, 3.0], device=device)\n" in done.stdout
    for line in ("-    weights = torch.tensor([1.0, 2.0, 3.0], device=device)", "+    weights = const_tensor",
                 "-    loss_sum = torch.tensor(0.0, device=device)", "+    loss_sum = torch.zeros((), device=device)"):
        assert line in done.stdout.splitlines()
    assert done.stderr == "would fix 2 problems in 1 file(s); 1 problem would remain\n"
    write(tmp_path, "clean.py", "import torch\nprint(torch.ones(2))\n")
    clean = run_stepscope("check", "--diff", "clean.py", cwd=tmp_path)
    assert (clean.returncode, clean.stdout) == (0, "")
    refused = run_stepscope("check", "--diff", "--format", "json", "train.py", cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.strip().splitlines()[-1].startswith("stepscope: ")


def test_a_file_that_does_not_parse_and_a_notebook_are_left_alone(tmp_path: Path):
    broken = write(tmp_path, "broken.py", TRAIN + "def oops(:\n")
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": TRAIN.splitlines(keepends=True)}
    notebook_text = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    notebook = write(tmp_path, "nb.ipynb", notebook_text)
    fixable = write(tmp_path, "train.py", TRAIN)
    done = run_stepscope("check", "--fix", ".", cwd=tmp_path)
    assert broken.read_text(encoding="utf-8") == TRAIN + "def oops(:\n"
    assert notebook.read_text(encoding="utf-8") == notebook_text
    assert fixable.read_text(encoding="utf-8") == FIXED  # the other files are still fixed
    assert "stepscope: broken.py:10: " in done.stderr and "not checked, not fixed" in done.stderr
    assert "stepscope: nb.ipynb: notebooks are not fixed here; apply their quick fixes in the editor" in done.stderr
    assert "nb.ipynb:cell 1:5:" in done.stdout  # its findings are still shown
    assert done.returncode == 2  # a file could not be checked


def test_line_breaks_byte_order_mark_and_json_output_are_kept(tmp_path: Path):
    path = write(tmp_path, "train.py", b"\xef\xbb\xbf" + TRAIN.replace("\n", "\r\n").encode())
    done = run_stepscope("check", "--fix", "--format", "json", "train.py", cwd=tmp_path)
    assert path.read_bytes() == b"\xef\xbb\xbf" + FIXED.replace("\n", "\r\n").encode()
    doc = json.loads(done.stdout)
    assert [(f["code"], f["line"], f["title"]) for f in doc["fixed"]] == [
        ("SS501", 5, "Build this tensor once, before the loop"),
        ("SS501", 6, "Create this value on the device: torch.zeros((), device=device)")]
    assert [d["code"] for d in doc["diagnostics"]] == ["SS101"] and done.returncode == 1


def test_json_and_sarif_list_the_editor_s_fixes_with_names_of_their_own(tmp_path: Path):
    two = TRAIN.replace("    print(loss_sum.item())\n", "    bias = torch.tensor([0.5, 0.5, 0.5], device=device)\n"
                                                            "    print((x + bias).sum())\n")
    write(tmp_path, "train.py", two)
    doc = json.loads(run_stepscope("check", "--format", "json", "train.py", cwd=tmp_path).stdout)
    fixes = {d["line"]: d["fixes"] for d in doc["diagnostics"]}
    assert [f["title"] for f in fixes[6]] == ["Create this value on the device: torch.zeros((), device=device)",
                                              "Ignore SS501 on this line"]
    hoists = [fixes[line][0]["edits"][0]["new_text"] for line in (5, 9)]
    assert hoists == ["const_tensor = torch.tensor([1.0, 2.0, 3.0], device=device)\n",
                      "const_tensor_2 = torch.tensor([0.5, 0.5, 0.5], device=device)\n"]
    sarif = json.loads(run_stepscope("check", "--format", "sarif", "train.py", cwd=tmp_path).stdout)
    first = sarif["runs"][0]["results"][0]
    assert first["fixes"][0]["description"]["text"] == "Build this tensor once, before the loop"


def test_a_linked_file_is_fixed_where_it_lives_and_the_link_stays(tmp_path: Path):
    real = write(tmp_path, "src/train.py", TRAIN)
    link = tmp_path / "train.py"
    link.symlink_to(real)
    done = run_stepscope("check", "--fix", "--ignore", "SS101", "train.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and real.read_text(encoding="utf-8") == FIXED
