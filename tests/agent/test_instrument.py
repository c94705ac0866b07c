"""The rewrite keeps the program the program it was, on every construct Python has, and labels the
statements of every branch.

Each program here runs twice in this process: compiled as Python compiles it, and rewritten by
`instrument.compile_module` with a runtime that records which labels were entered. Both runs must
print the same thing; the labels say which lines the profile would time. The real runtime and
recorder are exercised by the profile tests (tests/capture); this file is about the rewrite.
"""

from __future__ import annotations

import contextlib
import io
import sys
import textwrap
import types
from pathlib import Path

import pytest

from stepscope.agent import instrument
from stepscope.agent.instrument import RUNTIME_NAME, InstrumentError, compile_module
from stepscope.agent.program import ProgramFiles, install_import_hook
from stepscope.agent.protocol import Target, parse_label


class Recording:
    """`__stepscope__` that notes every label entered and the boundaries crossed."""

    def __init__(self) -> None:
        self.lines: list[int] = []
        self.boundaries = 0
        self.returns: list[object] = []

    def _enter(self, label: str):
        self.lines.append(parse_label(label).line)
        return contextlib.nullcontext()

    region = frame = line = step_call = _enter

    def iterate(self, iterable, label):
        for item in iterable:
            self.boundaries += 1
            yield item

    def step_boundary(self):
        self.boundaries += 1

    def loop_end(self):
        pass

    def returned(self, value):
        self.returns.append(value)
        return value

    def compiling(self):
        return False


def _run(source: str, **rewrite) -> tuple[str, Recording | None]:
    """Run `source` as a module and return what it printed (and the labels, when rewritten)."""
    source = textwrap.dedent(source)
    runtime = Recording() if rewrite.get("rewrite", True) else None
    rewrite.pop("rewrite", None)
    module = types.ModuleType("program")
    module.__dict__["__name__"] = "program"
    if runtime is None:
        code = compile(source, "program.py", "exec", dont_inherit=True)
    else:
        code = compile_module(source, "program.py", "f0", **rewrite)
        module.__dict__[RUNTIME_NAME] = runtime
    out = io.StringIO()
    sys.modules["program"] = module
    try:
        with contextlib.redirect_stdout(out):
            exec(code, module.__dict__)
    finally:
        del sys.modules["program"]
    return out.getvalue(), runtime


def _same(source: str, **rewrite) -> Recording:
    plain, _ = _run(source, rewrite=False)
    rewritten, runtime = _run(source, **rewrite)
    assert rewritten == plain
    assert plain  # the program printed something to compare
    return runtime


def _line_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if text in line)


GLOBALS = """\
    _CALLS = 0
    _SEEN = []

    def scale():
        global _CALLS
        _CALLS += 1
        return 1.0

    def late(flag):
        if flag:
            global _SEEN
            _SEEN = _SEEN + [flag]
        return len(_SEEN)

    def only_declares():
        global _CALLS

    def counter():
        total = 0
        def bump(by):
            if by >= 0:
                nonlocal total
                total += by
            return total
        return bump

    bump = counter()
    for i in range(3):
        scale()
        late(i)
        bump(i)
    only_declares()
    print(_CALLS, _SEEN, bump(10))
"""


def test_functions_that_declare_global_or_nonlocal_run_as_written():
    runtime = _same(GLOBALS)
    assert _line_of(GLOBALS, "_CALLS += 1") in runtime.lines
    assert _line_of(GLOBALS, "total += by") in runtime.lines
    assert _line_of(GLOBALS, "_SEEN = _SEEN + [flag]") in runtime.lines


def test_a_step_function_that_declares_global_is_still_the_step():
    runtime = _same(GLOBALS, step_function="scale")
    assert runtime.boundaries == 3
    runtime = _same(GLOBALS, step_function="only_declares")
    assert runtime.boundaries == 1


RETURNS = """\
    def step(i):
        def helper(x):
            return x * 10  # a nested function's return is its own
        square = lambda x: x * x
        if i == 0:
            return helper(i)
        elif i == 1:
            try:
                return square(i) + 1
            finally:
                print("finally", i)
        for j in range(3):
            if j == i:
                return (j, "found")
        if i == 3:
            return
        print("falls off", i)

    print([step(i) for i in range(5)])
"""


def test_a_step_functions_returns_give_back_their_value_and_tell_the_runtime():
    runtime = _same(RETURNS, step_function="step")
    assert runtime.boundaries == 5
    # the first four calls return through `returned`; the fifth falls off its end (no return to pass)
    assert runtime.returns == [0, 2, (2, "found"), None]
    profile = _same(RETURNS, step_function="step", regions=False)  # a measure's rewrite passes them too
    assert profile.returns == runtime.returns


BRANCHES = """\
    def branches(n, items):
        if n == 0:
            a = "zero"
        elif n == 1:
            a = "one"
        elif n == 2:
            a = "two"
        else:
            a = "many"
        for x in items:
            if x < 0:
                break
        else:
            a += " all positive"
        while n > 5:
            n -= 1
        else:
            a += " counted down"
        try:
            1 / n
        except ZeroDivisionError:
            a += " divided by zero"
        else:
            a += " divided"
        finally:
            a += "."
        match n:
            case 1:
                a += " matched one"
            case _:
                a += " matched other"
        return a

    for n in (0, 1, 2, 3, 7):
        print(branches(n, [1, 2, -1 if n == 3 else 3]))
"""


@pytest.mark.parametrize("step", [{}, {"step_function": "branches"}, {"step_line": "for n in"}])
def test_every_branch_of_if_elif_else_loops_try_and_match_gets_its_lines(step: dict):
    if "step_line" in step:
        step = {"step_line": _line_of(BRANCHES, step["step_line"])}
    runtime = _same(BRANCHES, **step)
    for statement in ['a = "zero"', 'a = "one"', 'a = "two"', 'a = "many"', 'a += " all positive"', "n -= 1",
                      'a += " counted down"', 'a += " divided by zero"', 'a += " divided"', 'a += "."',
                      'a += " matched one"', 'a += " matched other"', "return a"]:
        assert _line_of(BRANCHES, statement) in runtime.lines, statement


def test_an_elif_chain_of_hundreds_of_branches_compiles_and_labels_its_last_branch():
    branches = "".join(f"        {'if' if i == 0 else 'elif'} n == {i}:\n            r = {i} * 2\n" for i in range(400))
    source = f"def pick(n):\n    if True:\n{branches}    return r\n\nprint(pick(399), pick(7))\n"
    runtime = _same(source, step_function="pick")
    assert 2 + 2 * 400 in runtime.lines  # `r = 399 * 2`, the chain's last branch


def test_deeply_nested_blocks_compile_and_keep_the_regions_of_the_statements_around_them():
    depth = 17  # CPython allows 20 nested blocks; the rewrite must not push a function past them
    body, indent = [], "    "
    for level in range(depth):
        kind = ("for i{0} in range(1):", "with open(__import__('os').devnull):", "while True:")[level % 3]
        body.append(indent + kind.format(level))
        indent += "    "
    body.append(indent + "total.append(1)")
    for level in reversed(range(depth)):
        if level % 3 == 2:
            body.append("    " * (level + 2) + "break")
    source = "total = []\ndef nested():\n" + "\n".join(body) + "\n    print(len(total))\nnested()\n"
    runtime = _same(source)
    assert 3 in runtime.lines  # the function's outermost statement keeps its region
    assert 3 + depth not in runtime.lines  # the innermost has no room for one: its time is in those around it


def test_a_deep_expression_python_compiles_is_rewritten_without_recursion():
    terms = " + ".join(f"x{i % 7}" for i in range(900))  # copy.deepcopy fails on this (recursion)
    source = f"x0 = x1 = x2 = x3 = x4 = x5 = x6 = 1\ndef total():\n    return {terms}\nprint(total())\n"
    _same(source)


def test_docstrings_stay_the_first_statement():
    source = '''\
        def documented():
            """Adds two.

            >>> documented()
            2
            """
            return 1 + 1

        def only_a_docstring():
            "Nothing else."

        class Holder:
            "A class."
            def method(self):
                "A method."
                return documented.__doc__.splitlines()[0]

        import doctest, sys
        print(documented.__doc__, only_a_docstring.__doc__, Holder.__doc__, Holder.method.__doc__, Holder().method())
        print(doctest.testmod(sys.modules[__name__]))
    '''
    _same(source)


LANGUAGE = """\
    from __future__ import annotations

    import asyncio
    import functools
    import inspect
    import sys
    from dataclasses import dataclass
    from typing import TYPE_CHECKING

    if TYPE_CHECKING:
        from collections.abc import Iterator

    def traced(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return ("traced", fn(*args, **kwargs))
        return wrapper

    class Base:
        def hello(self) -> str:
            return "base"

    class Child(Base):
        label = [n * 2 for n in range(3)]

        def hello(self) -> str:
            return "child+" + super().hello() + "+" + __class__.__name__

        @property
        def caller(self) -> str:
            return sys._getframe(1).f_code.co_name

        @staticmethod
        @traced
        def decorated(x: int) -> int:
            return (y := x + 1) * y

    @dataclass
    class Point:
        x: int
        y: int = 0

    def numbers(limit: int) -> Iterator[int]:
        n = 0
        while n < limit:
            received = yield n
            n += received or 1
        return n

    def delegate():
        result = yield from numbers(3)
        yield ("returned", result)

    async def ticker(count):
        for i in range(count):
            await asyncio.sleep(0)
            yield i

    async def gather():
        got = [i async for i in ticker(3)]
        async with asyncio.timeout(5):
            await asyncio.sleep(0)
        return got

    def finally_returns():
        try:
            return "try"
        finally:
            print("finally ran")

    def where_am_i():
        return inspect.currentframe().f_code.co_name, inspect.stack()[0].function

    def shapes(value):
        match value:
            case {"kind": "point", "at": (x, y)}:
                return f"point {x},{y}"
            case [first, *rest] if rest:
                return f"list from {first} with {len(rest)} more"
            case Point(x=0):
                return "a point on the axis"
            case str() | bytes():
                return "text"
            case _:
                return "other"

    def uses_walrus(data):
        if (n := len(data)) > 2:
            return [v for x in data if (v := x * 2) > 2], n
        return [], n

    square = lambda v: v * v
    child = Child()
    print(child.hello(), child.label, child.caller, Child.decorated(3), Point(1), Point.__annotations__)
    print(list(numbers(4)), list(delegate()))
    gen = numbers(10)
    print(next(gen), gen.send(3), gen.send(2))
    print(asyncio.run(gather()))
    print(finally_returns(), where_am_i(), square(7))
    print([shapes(v) for v in ({"kind": "point", "at": (1, 2)}, [1, 2, 3], Point(0, 5), "s", 4.0)])
    print(uses_walrus([1, 2, 3]), uses_walrus([1]))
    try:
        raise ExceptionGroup("group", [ValueError(1), TypeError(2)])
    except* ValueError as e:
        print("value errors", len(e.exceptions))
    except* TypeError:
        print("type errors")
"""


@pytest.mark.skipif(sys.version_info < (3, 11), reason="except* and asyncio.timeout are Python 3.11's")
@pytest.mark.parametrize("step", [{}, {"regions": False}, {"step_function": "Child.hello"},
                                  {"step_function": "numbers"}, {"step_function": "gather"},
                                  {"step_line": "for i in range(count)"}])
def test_the_language_runs_as_written(step: dict):
    if "step_line" in step:
        step = {"step_line": _line_of(LANGUAGE, step["step_line"])}
    runtime = _same(LANGUAGE, **step)
    if step.get("regions", True):
        assert _line_of(LANGUAGE, "received = yield n") not in runtime.lines  # it suspends: never wrapped
        assert _line_of(LANGUAGE, 'return "child+"') in runtime.lines


def test_functions_a_bytecode_compiler_decorates_keep_their_code():
    source = """\
        def jit(fn=None, **options):  # what numba's jit sees: the function's own bytecode
            def compile(fn):
                assert "__stepscope__" not in fn.__code__.co_names, fn.__code__.co_names
                return fn
            return compile(fn) if fn is not None else compile

        @jit
        def kernel(x):
            return x + 1

        @jit(nopython=True)
        def other(x):
            for i in range(3):
                x += i
            return x

        import numpy as np
        vectorized = np.vectorize(lambda v: v)
        print(kernel(1), other(1))
    """
    runtime = _same(source)
    assert _line_of(source, "return x + 1") not in runtime.lines
    # the step's own loop is instrumented even there (the user asked for it)
    source = source.replace("assert", "pass  #")
    runtime = _same(source, step_line=_line_of(source, "for i in range(3)"))
    assert runtime.boundaries == 3
    nested = source.replace("def kernel(x):\n            return x + 1",
                            "def kernel(x):\n            def add(v):\n                return v + 1\n            return add(x)")
    runtime = _same(nested, step_function="kernel.add")  # a step function inside one (pandas has such)
    assert runtime.boundaries == 1


def test_a_module_whose_rewrite_does_not_compile_runs_as_it_is_and_says_so(tmp_path: Path, monkeypatch):
    # Made to fail on purpose: with no block limit the rewrite nests past CPython's 20 blocks.
    monkeypatch.setattr(instrument, "_BLOCK_LIMIT", 1000)
    nested = "def deep():\n" + "".join("    " * (i + 1) + f"for i{i} in range(1):\n" for i in range(19))
    nested += "    " * 20 + "return 'deep ran'\n"
    (tmp_path / "helper.py").write_text(nested)
    with pytest.raises(InstrumentError, match="does not compile .*nested blocks"):
        compile_module(nested, "helper.py", "f1")
    files = ProgramFiles(str(tmp_path), Target(path=str(tmp_path / "train.py"), line=1))
    install_import_hook(files, Recording())
    sys.path.insert(0, str(tmp_path))
    try:
        import helper  # noqa: F401 (the module under test, imported through the hook)

        assert helper.deep() == "deep ran"
    finally:
        sys.path.remove(str(tmp_path))
        sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "_WorkspaceFinder"]
        sys.modules.pop("helper", None)
    assert len(files.notes) == 1 and files.notes[0].startswith("helper.py ran without its lines timed: ")


def test_the_step_module_whose_rewrite_does_not_compile_keeps_its_step(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(instrument, "_BLOCK_LIMIT", 1000)
    source = "def deep():\n" + "".join("    " * (i + 1) + f"for i{i} in range(1):\n" for i in range(19))
    source += "    " * 20 + "pass\nfor step in range(3):\n    deep()\n"
    (tmp_path / "train.py").write_text(source)
    files = ProgramFiles(str(tmp_path), Target(path=str(tmp_path / "train.py"), line=22))
    code = files.compile(source.encode(), str(tmp_path / "train.py"))
    runtime = Recording()
    exec(code, {RUNTIME_NAME: runtime})
    assert runtime.boundaries == 3 and runtime.lines == []  # timed, without its lines
    assert files.notes == ["train.py, the step's file, ran with its step timed but without its lines: the rewritten "
                           "module does not compile (SyntaxError: too many statically nested blocks)"]
