"""Which pyproject.toml configures Stepscope, and its `[tool.stepscope]` table, read once.

Every part that reads `[tool.stepscope]` reads it through `read_table`: the static rules
(`rules/config.py`: the top-level keys) and the findings (`analysis/findings/thresholds.py`: the
`[tool.stepscope.findings]` table). Each part gives the values it owns their meaning and says what
is wrong with them; this module says what is wrong with the file itself.

Which pyproject.toml applies, as ruff and black find theirs:
- to a file: the nearest pyproject.toml in the file's folder or above it;
- to a run: the one that applies to the run's step file (the file holding the profiled loop);
- when the workspace root is known (`within`: a run's root, the editor's workspace folder, the
  analysis's `--source-root`), the search never goes above it: a pyproject.toml outside the
  workspace configures nothing in it.
A pyproject.toml without a `[tool.stepscope]` table still applies: its files get the defaults.

Invariants:
- `read_table` never raises. An unreadable file, invalid TOML, a `[tool.stepscope]` that is not a
  table, a key no part reads, or Python 3.10 without the `tomli` package gives a one-line warning
  naming the file, and the table holds only what could be read (empty: every default applies).
- A file is parsed once per (path, size, modification time): cheap to call on every edit.
Standard library only (plus `tomli` on Python 3.10, where the standard library has no TOML reader).
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

#: the keys of `[tool.stepscope]` read by the static rules (rules/config.py)
RULES_KEYS = ("select", "ignore", "per-file-ignores", "model-names", "sync-min-calls")
#: the sub-table read by the findings (analysis/findings/thresholds.py)
FINDINGS_KEY = "findings"
KNOWN_KEYS = (*RULES_KEYS, FINDINGS_KEY)


@dataclass(frozen=True)
class StepscopeTable:
    """`[tool.stepscope]` of the pyproject.toml that applies, as read."""

    path: Path | None = None  # that pyproject.toml; None when none applies
    values: Mapping[str, Any] = field(default_factory=dict)  # the table (read-only); {} when absent or unreadable
    warnings: tuple[str, ...] = ()  # what is wrong with the file itself, one line each

    @property
    def root(self) -> Path | None:
        """The folder of the pyproject.toml: paths in the table (per-file-ignores) are relative to it."""
        return self.path.parent if self.path is not None else None

    @property
    def origin(self) -> str:
        return str(self.path) if self.path is not None else "pyproject.toml"

    def subtable(self, key: str) -> tuple[dict[str, Any], list[str]]:
        """`[tool.stepscope.<key>]`, and a warning when it is there but is not a table."""
        value = self.values.get(key)
        if value is None:
            return {}, []
        if not isinstance(value, dict):
            return {}, [f"{self.origin}: [tool.stepscope.{key}] is not a table; defaults used"]
        return value, []


def find_pyproject(start: Path, within: Path | None = None) -> Path | None:
    """The pyproject.toml nearest to `start` (a file or a folder), not above `within` when given.

    A `start` outside `within` is searched without the bound (a file opened from outside the
    workspace still gets its own project's configuration)."""
    start = Path(start).resolve()
    folder = start if start.is_dir() else start.parent
    folders = [folder, *folder.parents]
    if within is not None:
        top = Path(within).resolve()
        if top in folders:
            folders = folders[:folders.index(top) + 1]
    for candidate in folders:
        path = candidate / "pyproject.toml"
        if path.is_file():
            return path
    return None


def read_table(start: Path, within: Path | None = None) -> StepscopeTable:
    """`[tool.stepscope]` of the pyproject.toml that applies to `start` (see the module's docstring)."""
    path = find_pyproject(start, within)
    if path is None:
        return StepscopeTable()
    try:
        stat = path.stat()
    except OSError as e:
        return StepscopeTable(path, {}, (f"{path}: not read ({_reason(e)}); using defaults",))
    return _read_cached(path, stat.st_mtime_ns, stat.st_size)


def toml_reader():
    """The TOML parser of this interpreter: `tomllib` (3.11+), else `tomli`, else None."""
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    try:  # Python 3.10: a dependency of the package (tomli; python_version < "3.11")
        import tomli

        return tomli
    except ImportError:
        return None


@functools.lru_cache(maxsize=64)
def _read_cached(path: Path, _mtime_ns: int, _size: int) -> StepscopeTable:
    reader = toml_reader()
    if reader is None:
        return StepscopeTable(path, {}, (
            f"{path}: [tool.stepscope] not read (Python {sys.version_info[0]}.{sys.version_info[1]} needs the "
            "'tomli' package: pip install tomli); using defaults",))
    try:
        doc = reader.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:  # TOMLDecodeError is a ValueError
        return StepscopeTable(path, {}, (f"{path}: not read ({_reason(e)}); using defaults",))
    tool = doc.get("tool")
    table = tool.get("stepscope") if isinstance(tool, dict) else None
    if table is None:
        return StepscopeTable(path)
    if not isinstance(table, dict):
        return StepscopeTable(path, {}, (f"{path}: [tool.stepscope] is not a table; using defaults",))
    unknown = [key for key in table if key not in KNOWN_KEYS]
    warnings = tuple(f"{path}: tool.stepscope.{key} is not a Stepscope setting; ignored "
                     f"(known: {', '.join(KNOWN_KEYS)})" for key in unknown)
    # shared by every caller through the cache: read-only
    return StepscopeTable(path, MappingProxyType({k: v for k, v in table.items() if k in KNOWN_KEYS}), warnings)


def _reason(e: BaseException) -> str:
    text = str(e)
    return text.splitlines()[0] if text else type(e).__name__
