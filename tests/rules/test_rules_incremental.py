"""The editor's incremental check gives, after every edit, exactly what a full check gives.

Random edits (typed suffixes, replaced lines, renamed names, new imports, syntax errors, new and
deleted lines) are applied one after another to real and generated training modules; after each
one the document checker must equal `check_source` on the same text.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from stepscope.rules import Config, check_source
from stepscope.rules.incremental import DocumentChecker

from .helpers import src
from .test_rules_properties import CORPUS, PIECES, SETTINGS, indent, programs

EVERY = Config(select=("SS",))
HEADER = ('"""Training."""\nimport time\nimport torch\n'
          "from torch.profiler import (\n    profile,\n    schedule,  # the window\n    record_function,\n)\n")
SUFFIXES = [".item()", "  # stepscope: ignore[SS101]", "  # stepscope: ignore", "  # cuda", " + 1",
            ".cpu()", "(", ")", ":", "  # batches", "  # const_tensor", "  # exists(p)"]
RENAMES = [("loss", "loss.item()"), ("perf_counter", "time"), ("warmup=1", "warmup=0"),
           ("warmup=2", "warmup=0"), ("prof", "p"), ("model", "net"), ("loader", "iter(loader)"),
           ("optimizer", "opt"), ("x", "y"), ("record_shapes=False", "record_shapes=True"),
           ("'t.json'", "f't{i}.json'"), ("synchronize", "sync"), ("(", "(("), ("cpu", "cuda")]
LINE_PIECES = [p for p in PIECES if "\n" not in p] + [
    "import time as torch", "from torch import profiler as time", "loader = iter(loader)",
    "path = 'trace.json'", "rows = [e for e in prof.events() if e.device_type == 1]",
    "with profile(schedule=schedule(wait=0, warmup=0, active=2)) as prof: pass",
    "x = x.cuda()", "t = torch.ones(3).to('cuda')", "prof = torch.profiler.profile()", "",
    "@decorator", "def g(): pass", "class K: pass", "y = 1", "  ", "# comment",
    "n_iter = 3", "n_iter = 30", "path = 'other.json'", "if os.path.isfile(path): pass",
    "def log_loss(v): return v.item()", "log_loss(loss)", "prof.start()", "prof.stop()",
    "with prof: pass", "assert torch.isfinite(loss).all()", "import tensorflow as tf",
    "def closure(): return loss.item()", "optimizer.step(closure)", "if i % 10 == 0: closure()",
]


@st.composite
def modules(draw) -> str:
    parts = [HEADER]
    for k in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["def", "class", "module", "decorated"]))
        body = draw(programs(1))
        if kind == "def":
            parts.append(f"def f{k}(model, loader, optimizer):\n" + indent(body, 4))
        elif kind == "decorated":
            parts.append(f"@torch.no_grad()\ndef g{k}(model, loader=None):\n" + indent(body, 4))
        elif kind == "class":
            other = draw(programs(2))
            parts.append(f"class C{k}:\n    width = 3\n\n    def run(self, model, loader):\n"
                         + indent(body, 8) + "\n\n    @torch.no_grad()\n"
                         "    def other(self, prof, x=torch.ones(2)):\n" + indent(other, 8))
        else:
            parts.append(body)
    return "\n\n".join(parts) + "\n"


@st.composite
def edits(draw, text: str) -> str:
    lines = text.split("\n")
    i = draw(st.integers(0, max(0, len(lines) - 1)))
    line = lines[i]
    lead = line[: len(line) - len(line.lstrip())]
    op = draw(st.sampled_from(["suffix", "replace", "rename", "rename", "insert", "delete", "chars"]))
    if op == "suffix":
        lines[i] = line + draw(st.sampled_from(SUFFIXES))
    elif op == "replace":
        lines[i] = lead + draw(st.sampled_from(LINE_PIECES))
    elif op == "rename":
        old, new = draw(st.sampled_from(RENAMES))
        lines[i] = line.replace(old, new)
    elif op == "insert":
        lines.insert(i, lead + draw(st.sampled_from(LINE_PIECES)))
    elif op == "delete":
        del lines[i]
    else:
        at = draw(st.integers(0, len(line)))
        lines[i] = line[:at] + draw(st.text(alphabet="()[]:'\" .x\t", max_size=3)) + line[at:]
    return "\n".join(lines)


def assert_same_as_full_check_after_each_edit(text: str, data, config: Config = EVERY) -> None:
    checker = DocumentChecker("/w/train.py", config)
    assert checker.check(text) == check_source(text, "/w/train.py", config)
    for _ in range(data.draw(st.integers(1, 6))):
        text = data.draw(edits(text))
        assert checker.check(text) == check_source(text, "/w/train.py", config), text


@SETTINGS
@given(modules(), st.data())
def test_generated_modules_after_random_edits(text: str, data):
    assert_same_as_full_check_after_each_edit(text, data)


@SETTINGS
@given(st.sampled_from(CORPUS), st.data())
def test_real_sources_after_random_edits(text: str, data):
    assert_same_as_full_check_after_each_edit(text, data)


@SETTINGS
@given(modules(), st.data())
def test_default_rules_after_random_edits(text: str, data):
    assert_same_as_full_check_after_each_edit(text, data, Config())


TRAIN = src('''
    import torch


    def train(model, loader, optimizer):
        for x, y in loader:
            loss = model(x, y)
            loss.backward()
            optimizer.step()


    def evaluate(model, loader):
        for x, y in loader:
            out = model(x)
''')


def test_typing_in_a_function_updates_its_diagnostics_and_keeps_the_others():
    checker = DocumentChecker("/w/train.py", EVERY)
    assert checker.check(TRAIN) == []
    typed = TRAIN.replace("optimizer.step()", "print(loss.item())")
    found = checker.check(typed)
    assert [(d.code, d.line) for d in found] == [("SS101", 8)]
    assert checker.last_was_incremental  # answered from the edited function alone
    both = typed.replace("out = model(x)", "out = model(x).cpu()")
    # the second loop only runs the model: an evaluation loop, reported under SS103
    assert [(d.code, d.line) for d in checker.check(both)] == [("SS101", 8), ("SS103", 13)]
    assert checker.last_was_incremental
    assert checker.check(TRAIN) == []


def test_an_edit_other_blocks_depend_on_is_checked_whole():
    checker = DocumentChecker("/w/train.py", EVERY)
    checker.check(TRAIN)
    renamed = TRAIN.replace("import torch", "import torch as tt")
    assert checker.check(renamed) == check_source(renamed, "/w/train.py", EVERY)
    assert not checker.last_was_incremental


def test_a_real_module_edited_line_by_line():
    text = (Path(__file__).resolve().parents[2] / "examples" / "train_cpu.py").read_text(encoding="utf-8")
    checker = DocumentChecker("/w/train_cpu.py", EVERY)
    checker.check(text)
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not line.startswith(" ") or not line.strip():
            continue
        lines[i] = line + "  # typed"
        edited = "\n".join(lines)
        assert checker.check(edited) == check_source(edited, "/w/train_cpu.py", EVERY)


def test_an_edit_inside_a_closure_the_step_runs_is_checked_as_the_step():
    text = src('''
        import torch


        def train(model, x, y, optimizer, steps):
            for i in range(steps):
                def closure():
                    optimizer.zero_grad()
                    loss = model(x, y)
                    loss.backward()
                    return loss
                optimizer.step(closure)
    ''')
    checker = DocumentChecker("/w/train.py", EVERY)
    assert checker.check(text) == check_source(text, "/w/train.py", EVERY)
    edited = text.replace("loss.backward()", "loss.backward()\n            print(loss.item())")
    got = checker.check(edited)
    assert got == check_source(edited, "/w/train.py", EVERY)
    assert [d.code for d in got] == ["SS101"]
