"""No quick fix changes what a program computes: every fix offered on the corpus's programs
(tests/rules/data/quickfix_corpus), each alone and all together as `stepscope check --fix` makes
them, gives a program that compiles and prints exactly what the original printed.

The programs, before and after, run in one Python process (torch and what torch.optim loads are
imported once: most of the test's time); each gets a fresh namespace and seeds torch itself, and an
exception is part of its output, so a fix that makes the second step
fail ("Trying to backward through the graph a second time") is a difference like any other.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from stepscope.rules import Config, check_source
from stepscope.rules.autofix import fix_text
from stepscope.rules.quickfix import editor_fixes

from .helpers import apply_fix

CORPUS = Path(__file__).resolve().parent / "data" / "quickfix_corpus"
EVERY_RULE = Config(select=("SS",))

RUNNER = r"""
import contextlib, io, json, sys
programs = json.load(sys.stdin)
out = {}
for name, text in programs:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        try:
            exec(compile(text, name, "exec"), {"__name__": "__main__"})
        except BaseException as e:  # the failure is the program's result
            print(f"raised {type(e).__name__}: {e}")
    out[name] = printed.getvalue()
print(json.dumps(out))
"""


def _run(programs: list[tuple[str, str]]) -> dict[str, str]:
    """What each program printed, by name."""
    done = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(programs), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _offered(text: str, path: str) -> list[tuple[str, str]]:
    """(what was fixed, fixed text) for every fix offered on `text` that changes code."""
    out = []
    for diag in check_source(text, path, EVERY_RULE):
        for fix in editor_fixes(diag, text):
            if not fix.title.startswith("Ignore "):
                out.append((f"{diag.code} line {diag.line}: {fix.title}", apply_fix(text, fix)))
    return out


@pytest.fixture(scope="module")
def corpus() -> dict:
    originals: list[tuple[str, str]] = []
    fixed: list[tuple[str, str]] = []
    titles: list[str] = []
    for path in sorted(CORPUS.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        originals.append((path.name, text))
        where = f"/corpus/{path.name}"  # a path under tests/ would be taken for a test file
        for title, after in _offered(text, where):
            titles.append(title)
            fixed.append((f"{path.name} | {title}", after))
        after, applied, _remaining, note = fix_text(text, where, EVERY_RULE)
        assert note is None, (path.name, note)
        if applied:
            fixed.append((f"{path.name} | --fix", after))
    # a control: the hoist the old fix made of the accumulator, which the comparison must catch
    accumulator = dict(originals)["accumulated_micro_batches.py"]
    hoisted = accumulator.replace("    loss_sum = torch.tensor(0.0, device=device)\n", "    loss_sum = const_tensor\n") \
        .replace("for step in range(12):\n", "const_tensor = torch.tensor(0.0, device=device)\nfor step in range(12):\n", 1)
    fixed.append(("control | accumulator hoisted", hoisted))
    printed = _run([(f"before | {name}", text) for name, text in originals] + fixed)
    return {"originals": dict(originals), "fixed": fixed, "titles": titles,
            "before": {name: printed[f"before | {name}"] for name, _ in originals}, "after": printed}


def test_the_corpus_runs_and_offers_each_kind_of_fix(corpus):
    for name, printed in corpus["before"].items():
        assert printed and "raised" not in printed, (name, printed)
    titles = corpus["titles"]
    assert sum("Build this tensor once" in t for t in titles) >= 5
    assert sum("Create this value on the device" in t for t in titles) >= 8
    assert sum(t.startswith("SS101") for t in titles) == 2
    assert any(t.startswith("SS202") for t in titles)


def test_the_comparison_catches_a_fix_that_breaks_the_program(corpus):
    printed = corpus["after"]["control | accumulator hoisted"]
    assert "Trying to backward through the graph a second time" in printed


def test_no_fix_changes_what_a_program_prints(corpus):
    different = []
    for name, text in corpus["fixed"]:
        if name.startswith("control |"):
            continue
        compile(text, name, "exec")
        original = name.split(" | ")[0]
        if corpus["after"][name] != corpus["before"][original]:
            different.append(f"{name}:\n{corpus['after'][name]}\n---\n{corpus['before'][original]}")
    assert not different, "\n\n".join(different)
    assert len(corpus["fixed"]) >= 25


def test_fixes_made_together_use_names_of_their_own(corpus):
    name = "class_weights_and_mask.py | --fix"
    text = dict(corpus["fixed"])[name]
    assert "const_tensor_2 = torch.tensor([1.0, 2.0, 0.5], device=device)\n" in text
    assert "const_tensor_3 = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0]).to(device)\n" in text
    assert "const_tensor = 3\n" in text  # the user's own name is left alone
