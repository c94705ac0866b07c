"""Property-based tests: whatever the editor holds while the user types, the checker answers.

Sources are real ones cut, mutated and recombined, generated programs built from training-loop
pieces, and arbitrary bytes. The checker runs with `strict=True`, so a rule that raises fails here
instead of being skipped.
"""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stepscope.rules import Config
from stepscope.rules.context import source_lines
from stepscope.rules.engine import check_source
from stepscope.rules.files import check_notebook, decode_source
from stepscope.source import AmbiguousStep, NoStepFound, SourceSyntaxError, choose_step, find_loops, loop_at

from .helpers import apply_fix

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CORPUS = [
    (HERE / "data" / "guide_reference.py").read_text(encoding="utf-8"),
    (REPO / "examples" / "train_cpu.py").read_text(encoding="utf-8"),
]
EVERY = Config(select=("SS",))
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

PIECES = [
    "loss = criterion(model(x), y)", "loss.backward()", "optimizer.step()",
    "optimizer.zero_grad()", "total += loss.item()", "v = out.cpu().numpy()",
    "print(loss)", "if loss > 1:\n    pass", "torch.cuda.synchronize()",
    "t0 = time.time()", "dt = time.time() - t0", "t1 = time.perf_counter()",
    "e = time.perf_counter() - t1", "m = torch.tensor([1.0, 2.0]).cuda()",
    "prof.step()", "prof.export_chrome_trace('t.json')",
    "with record_function(f'x {prompt}'):\n    pass",
    "s = sum(e.cpu_time_total for e in prof.key_averages())", "x = next(it)",
    "it = iter(loader)", "out = model(x)", "float(loss)", "break", "continue", "pass",
    "lambda: loss.item()", "def inner():\n    return loss.item()", "é = 'ü'  # ünïcode",
    "assert torch.isfinite(loss).all()", "math.isnan(loss)", "n_iter = 5", "n_iter = 50",
    "self.run_backward(loss)", "prof.start()", "prof.stop()", "prof = torch.profiler.profile()",
    "log_loss(loss)", "def log_loss(v):\n    return v.item()", "t = torch.ones(x.shape).cuda()",
    "writer.add_scalar('loss', loss.data, 0)", "y = x.cpu().numpy()", "v = y[0].item()",
    "prof.export_chrome_trace(os.path.join('out', 't.json'))", "os.path.exists('t.json')",
]
HEADERS = [
    "for x, y in loader:", "for _ in range(4):", "while True:", "with torch.no_grad():",
    "with profile(schedule=schedule(wait=1, warmup=0, active=2), record_shapes=True) as prof:",
    "with profile() as prof:", "if step % 10 == 0:", "def train():", "class T:",
    "async def f():", "try:", "with record_function('step'):", "for _ in range(n_iter):",
    "if args.debug:", "if (step + 1) % accum_steps == 0:", "with prof:", "while loss > 1:",
    "with torch.no_grad():", "if i == 0:",
]


def indent(block: str, n: int) -> str:
    return "\n".join(" " * n + line for line in block.split("\n"))


@st.composite
def programs(draw, depth: int = 0) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        if depth < 3 and draw(st.booleans()):
            header = draw(st.sampled_from(HEADERS))
            body = draw(programs(depth + 1))
            block = header + "\n" + indent(body, 4)
            if header == "try:":
                block += "\nexcept Exception:\n    pass"
            parts.append(block)
        else:
            parts.append(draw(st.sampled_from(PIECES)))
    return "\n".join(parts)


def assert_well_formed(text: str, diags) -> None:
    lines = source_lines(text) or [""]
    keys = [(d.line, d.col, d.code) for d in diags]
    assert keys == sorted(keys)
    for d in diags:
        assert 1 <= d.line <= d.end_line <= len(lines)
        assert 0 <= d.col and 0 <= d.end_col <= len(lines[d.end_line - 1]) + 1
        assert d.code in d.url and d.message and "\n" not in d.message
        for fix in d.fixes:
            for e in fix.edits:
                assert 1 <= e.line <= e.end_line <= len(lines) + 1


@SETTINGS
@given(programs())
def test_generated_programs_check_cleanly(body: str):
    text = "import time\nimport torch\nfrom torch.profiler import profile, schedule, record_function\n" + body + "\n"
    try:
        ast.parse(text)
    except SyntaxError:
        return  # e.g. `break` outside a loop: covered by the mutation test below
    diags = check_source(text, "/w/gen.py", EVERY, strict=True)
    assert_well_formed(text, diags)
    for d in diags:
        for fix in d.fixes:
            ast.parse(apply_fix(text, fix))  # every offered fix keeps the file valid Python
    for loop in find_loops(text):
        assert loop_at(text, loop.line) is not None
        assert loop.line <= loop.end_line and all(loop.line < b <= loop.end_line for b in loop.body_lines)


@SETTINGS
@given(st.sampled_from(CORPUS), st.data())
def test_cut_and_mutated_real_sources_never_crash(source: str, data):
    lines = source.splitlines(keepends=True)
    op = data.draw(st.sampled_from(["truncate", "delete", "insert", "swap", "chars"]))
    if op == "truncate":
        text = source[: data.draw(st.integers(0, len(source)))]
    elif op == "delete":
        i = data.draw(st.integers(0, len(lines) - 1))
        text = "".join(lines[:i] + lines[i + 1:])
    elif op == "insert":
        i = data.draw(st.integers(0, len(lines)))
        junk = data.draw(st.sampled_from(["    (\n", "for x in\n", "  ]\n", "def f(:\n", "'''\n",
                                          "\tx = 1\n", "if loss:\n", "\x00\n", "\\\n"]))
        text = "".join(lines[:i] + [junk] + lines[i:])
    elif op == "swap":
        i, j = sorted(data.draw(st.lists(st.integers(0, len(lines) - 1), min_size=2, max_size=2)))
        lines[i], lines[j] = lines[j], lines[i]
        text = "".join(lines)
    else:
        i = data.draw(st.integers(0, len(source)))
        text = source[:i] + data.draw(st.text(max_size=5)) + source[i:]
    diags = check_source(text, "/w/mut.py", EVERY, strict=True)
    assert_well_formed(text, diags)
    try:
        step = choose_step(text)
        assert step.is_step or step.contains
    except (SourceSyntaxError, AmbiguousStep, NoStepFound):
        pass


@SETTINGS
@given(st.binary(max_size=400))
def test_arbitrary_bytes_decode_or_give_a_one_line_reason(data: bytes):
    try:
        text = decode_source(data)
    except ValueError as e:
        assert str(e) and "\n" not in str(e)
        return
    check_source(text, "/w/bytes.py", EVERY, strict=True)


@SETTINGS
@given(st.lists(st.one_of(programs(), st.sampled_from(["%time x = 1", "!ls", "%%bash\nls",
                                                        "x = (", "print(1)"])), max_size=5))
def test_notebooks_of_any_cells(cells: list[str]):
    for d in check_notebook(cells, "/w/nb.ipynb", EVERY):
        assert d.cell is not None and 1 <= d.cell <= len(cells)
        cell_lines = cells[d.cell - 1].split("\n")
        assert 1 <= d.line <= d.end_line <= len(cell_lines)


def test_deeply_nested_and_huge_sources_do_not_crash():
    deep = "x = " + "(" * 150 + "1" + ")" * 150 + "\n"
    long_expr = "y = " + " + ".join(["loss"] * 900) + "\n"  # deep, but Python still parses it
    nested = "".join("    " * i + "for i%d in loader:\n" % i for i in range(60)) + "    " * 60 + "loss.backward()\n"
    sync = "for x in loader:\n    loss = model(x)\n    loss.backward()\n    print(loss.item())\n"
    for text in (deep, long_expr, nested):
        found = check_source(text + sync, "/w/big.py", EVERY, strict=True)
        assert [d.code for d in found if d.line > text.count("\n")] == ["SS101"]
    too_deep = "y = " + " + ".join(["a"] * 5000) + "\n"  # Python's own parser gives up
    assert check_source(too_deep + sync, "/w/big.py", EVERY) == []
    loops = find_loops(nested)
    assert choose_step(nested) == loops[-1]
