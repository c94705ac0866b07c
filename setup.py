"""The compiled parts of stepscope, each the twin of a pure-Python reference that gives the same
results: the trace column scanner (trace/_columns.c, twin of the reader's builder), the row indexes
(trace/_rows.c, twins of the model's `rows` and `rows_named`), the operator nesting kernel
(analysis/_nesting.c, twin of analysis/nesting.py) and the timeline's kernels (analysis/_timeline.c,
twins of analysis/timeline_kernels.py).

Everything else is declared in pyproject.toml. The extensions are optional: where they cannot be
built (no C compiler), the pure-Python paths run, slower. They are built for CPython's stable ABI,
so one binary serves Python 3.10 and every later version.
"""

from setuptools import Extension, setup

FLAGS = ["-std=c99", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers",
         "-Wno-cast-function-type"]

setup(
    ext_modules=[
        Extension(name, [source], py_limited_api=True, optional=True, extra_compile_args=FLAGS)
        for name, source in (
            ("stepscope.trace._columns", "server/stepscope/trace/_columns.c"),
            ("stepscope.trace._rows", "server/stepscope/trace/_rows.c"),
            ("stepscope.analysis._nesting", "server/stepscope/analysis/_nesting.c"),
            ("stepscope.analysis._timeline", "server/stepscope/analysis/_timeline.c"),
        )
    ],
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
