"""Notebooks as `stepscope check` reads them: IPython syntax is no parse error, and every message
names the cell and the line in it, in text, JSON and SARIF alike."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from stepscope.mcp.summaries import check_result
from stepscope.rules import check_files
from stepscope.rules.notebooks import cell_python
from stepscope.rules.output import render_json, render_sarif

from ..conftest import run_stepscope
from .test_rules_cli import SARIF_SCHEMA, write

# Cells as notebooks on public projects write them (rewritten): set-up with shell and magics,
# help look-ups, a cell magic in another language, a timed training cell.
IPYTHON_CELLS = [
    "!pip freeze | grep torch\nimport torch\nimport time\n",
    "files = !ls data/\nt = %time len(files)\nn, m = !echo 1 2\n",
    "torch.ones?\ntorch.ones??\n?torch.zeros\n%load_ext autoreload\n%autoreload 2\n",
    "%%bash\necho 'not python'\nfor f in *.txt; do wc -l $f; done\n",
    "%%writefile helper.py\ndef half_typed(:\n",
    "%run -i prepare.py \\\n    --size 3\npip install einops\n",
    "msg = ('loss %.3f, acc %.2f'\n       % (1.0, 0.5))\nok = (1\n      != 2)\n",
    "%%time\nfor x, y in loader:\n    loss = model(x).sum()\n    loss.backward()\n"
    "    print(loss.item())\n    !nvidia-smi\n",
]
LOOP_CELL = 8  # the cell with the training loop: its `.item()` is on its line 5


def json_and_sarif(path: Path) -> tuple[dict, dict]:
    """What `check --format json` and `--format sarif` print for `path` (the same calls, in
    process: the command itself is run for the text output)."""
    result = check_files([path])
    sarif = json.loads(render_sarif(result.diagnostics, result.errors))
    jsonschema.validate(sarif, json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))
    return json.loads(render_json(result.diagnostics, result.errors, result.files_checked)), sarif


def notebook(cells: list[str | dict]) -> str:
    """A notebook's JSON: a string is a code cell's source, a dict a cell as it is."""
    return json.dumps({"cells": [c if isinstance(c, dict) else {
        "cell_type": "code", "source": c, "metadata": {}, "outputs": [], "execution_count": None}
        for c in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_ipython_syntax_is_no_parse_error_and_messages_cite_the_cell(tmp_path: Path):
    write(tmp_path, "train.ipynb", notebook([{"cell_type": "markdown", "source": "# Train\n"}, *IPYTHON_CELLS]))
    done = run_stepscope("check", "train.ipynb", cwd=tmp_path)
    assert (done.returncode, done.stderr.splitlines()[0]) == (
        1, "1 problem in 1 file(s) checked"), done.stderr
    cell = LOOP_CELL + 1  # the markdown cell counts, as the notebook numbers its cells
    assert done.stdout.startswith(
        f"train.ipynb:cell {cell}:5:11: SS101 when this loop runs on a GPU, `.item()`")
    assert f"training loop (cell {cell}, line 2)" in done.stdout

    doc, sarif = json_and_sarif(tmp_path / "train.ipynb")
    ((d,), errors) = doc["diagnostics"], doc["errors"]
    assert (d["cell"], d["line"], errors, doc["files_checked"]) == (cell, 5, [], 1)
    assert f"(cell {cell}, line 2)" in d["message"]
    text, _structured = check_result(doc)  # what the MCP `check` tool says
    assert text.startswith(f"{d['path']}:cell {cell}:5: SS101 ")
    (result,) = sarif["runs"][0]["results"]
    assert result["properties"] == {"notebookCell": cell}
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 5
    assert f"(cell {cell}, line 2)" in result["message"]["text"]


def test_a_cell_that_does_not_parse_is_named_once_with_its_own_line(tmp_path: Path):
    cells = ["import torch\n", "%%time\nx = 1\ndef f(:\n    pass\n", IPYTHON_CELLS[-1]]
    write(tmp_path, "nb.ipynb", notebook(cells))
    done = run_stepscope("check", "nb.ipynb", cwd=tmp_path)
    assert done.returncode == 2  # the check is incomplete
    assert done.stdout.startswith("nb.ipynb:cell 3:5:11: SS101")  # the other cells were checked
    errors = done.stderr.splitlines()
    assert errors[0] == ("stepscope: nb.ipynb:cell 2:3: does not parse (invalid syntax); "
                         "the other cells were checked")
    assert "not checked" not in done.stderr
    assert errors[-1] == "1 problem in 0 file(s) checked; 1 notebook(s) checked in part"
    doc, sarif = json_and_sarif(tmp_path / "nb.ipynb")
    assert [(e["cell"], e["line"]) for e in doc["errors"]] == [(2, 3)]
    (note,) = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert note["properties"] == {"notebookCell": 2}
    assert note["locations"][0]["physicalLocation"]["region"] == {"startLine": 3}
    assert "not checked" not in note["message"]["text"]


def test_ipython_lines_become_python_and_python_lines_stay():
    cell = ("for i in range(3):\n"
            "    !echo {i} \\\n"
            "        more\n"
            "    out = %timeit -o f(i)\n"
            "    obj.attr?\n"
            "text = ('%d items'\n"
            "        % n)\n"
            "s = '''\n"
            "%not a magic: inside a string\n"
            "'''\n")
    python = cell_python(cell)
    assert python.split("\n") == [
        "for i in range(3):", "    pass", "", "    out = None", "    pass",
        "text = ('%d items'", "        % n)", "s = '''", "%not a magic: inside a string", "'''", ""]
