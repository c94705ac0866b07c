"""The one compiled part of stepscope: the trace column scanner (server/stepscope/trace/_columns.c).

Everything else is declared in pyproject.toml. The extension is optional: where it cannot be built
(no C compiler), the reader uses its pure-Python path, which reads exactly the same traces. It is
built for CPython's stable ABI, so one binary serves Python 3.10 and every later version.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "stepscope.trace._columns",
            ["server/stepscope/trace/_columns.c"],
            py_limited_api=True,
            optional=True,
            extra_compile_args=["-std=c99", "-Wall", "-Wextra", "-Wno-unused-parameter",
                                "-Wno-missing-field-initializers", "-Wno-cast-function-type"],
        )
    ],
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
