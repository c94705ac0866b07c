"""Configuration of the static rules, from `[tool.stepscope]` of the nearest pyproject.toml.

Which pyproject.toml applies, and reading it, is `stepscope.config`'s (shared with the findings'
thresholds); this module gives the rules' keys their meaning.

```toml
[tool.stepscope]
select = ["SS1", "SS3"]          # codes or prefixes; default: the rules that are on by default
ignore = ["SS202"]               # codes or prefixes, removed from the selection
per-file-ignores = { "tests/**" = ["SS101"], "bench_*.py" = ["SS2"] }
model-names = ["unet", "engine"] # extra callee names that count as running a model
sync-min-calls = 2               # SS102: synchronize calls in one region before it is reported
```

Invariants: `load_config` never raises for a bad file; it returns defaults and puts a one-line
reason in `Config.warnings`, with the file's own problems (unreadable, a key no part reads).
`[tool.stepscope.findings]` is left to the findings. Rule selection is a pure function:
`Config.enabled(code, path)`.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, Mapping

from ..config import read_table
from .model import RULES


@dataclass(frozen=True)
class Config:
    select: tuple[str, ...] | None = None  # None: the rules on by default
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    model_names: tuple[str, ...] = ()
    sync_min_calls: int = 2
    root: Path | None = None  # folder of the pyproject.toml the config came from
    warnings: tuple[str, ...] = field(default=())

    def with_cli(self, select: tuple[str, ...] | None, ignore: tuple[str, ...]) -> "Config":
        """`--select` replaces the configured selection; `--ignore` adds to it."""
        return replace(self, select=select if select is not None else self.select,
                       ignore=self.ignore + ignore)

    def enabled_codes(self) -> frozenset[str]:
        if self.select is None:
            codes = {c for c, r in RULES.items() if r.default_on}
        else:
            codes = {c for c in RULES if any(c.startswith(p) for p in self.select)}
        return frozenset(c for c in codes if not any(c.startswith(p) for p in self.ignore))

    def ignored_for(self, path: str) -> tuple[str, ...]:
        if not self.per_file_ignores:
            return ()
        rel = _relative(path, self.root)
        out: list[str] = []
        for pattern, codes in self.per_file_ignores:
            if _matches(rel, pattern):
                out.extend(codes)
        return tuple(out)

    def enabled(self, code: str, path: str = "") -> bool:
        if code not in self.enabled_codes():
            return False
        return not any(code.startswith(p) for p in self.ignored_for(path))


def _relative(path: str, root: Path | None) -> str:
    p = Path(path)
    if root is not None:
        try:
            return p.resolve().relative_to(root.resolve()).as_posix()
        except (ValueError, OSError):
            pass
    return p.as_posix()


def _matches(rel: str, pattern: str) -> bool:
    posix = PurePosixPath(rel)
    return (fnmatch.fnmatch(rel, pattern) or posix.match(pattern)
            or fnmatch.fnmatch(posix.name, pattern)
            or (pattern.endswith("/**") and rel.startswith(pattern[:-3] + "/")))


def validate_codes(values: list[str] | tuple[str, ...]) -> list[str]:
    """The entries of `values` that match no rule (for a usage error or a warning)."""
    return [v for v in values if not any(code.startswith(v) for code in RULES)]


def load_config(start: Path, within: Path | None = None) -> Config:
    """The configuration that applies to `start` (a file or folder): `[tool.stepscope]` of the
    nearest pyproject.toml, not above `within` (the workspace root) when given; defaults if none.

    Cheap to call on every edit: `stepscope.config` parses a file once per size and modification time.
    """
    table = read_table(Path(start), within)
    if table.path is None:
        return Config()
    config = config_from_table(table.values, root=table.root, origin=table.origin)
    return replace(config, warnings=table.warnings + config.warnings)


def _code_list(table: Mapping[str, Any], key: str, warnings: list[str], origin: str) -> tuple[str, ...] | None:
    if key not in table:
        return None
    value = table[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        warnings.append(f"{origin}: tool.stepscope.{key} must be a list of rule codes; ignored")
        return None
    unknown = validate_codes(value)
    if unknown:
        warnings.append(f"{origin}: tool.stepscope.{key}: unknown rule code(s) {', '.join(unknown)}")
    return tuple(v for v in value if v not in unknown)


def config_from_table(table: Mapping[str, Any], root: Path | None = None, origin: str = "pyproject.toml") -> Config:
    """The rules' keys (`stepscope.config.RULES_KEYS`) of a `[tool.stepscope]` table; what cannot be
    used keeps its default, with a one-line warning."""
    warnings: list[str] = []
    select = _code_list(table, "select", warnings, origin)
    ignore = _code_list(table, "ignore", warnings, origin) or ()
    per_file: list[tuple[str, tuple[str, ...]]] = []
    raw = table.get("per-file-ignores", {})
    if isinstance(raw, dict):
        for pattern, codes in raw.items():
            if isinstance(codes, list) and all(isinstance(c, str) for c in codes):
                per_file.append((str(pattern), tuple(codes)))
            else:
                warnings.append(f"{origin}: per-file-ignores[{pattern!r}] must be a list of codes")
    else:
        warnings.append(f"{origin}: tool.stepscope.per-file-ignores must be a table")
    models = table.get("model-names", [])
    if not (isinstance(models, list) and all(isinstance(m, str) for m in models)):
        warnings.append(f"{origin}: tool.stepscope.model-names must be a list of names; ignored")
        models = []
    min_calls = table.get("sync-min-calls", 2)
    if not isinstance(min_calls, int) or isinstance(min_calls, bool) or min_calls < 2:
        warnings.append(f"{origin}: tool.stepscope.sync-min-calls must be an integer >= 2")
        min_calls = 2
    return Config(select=select, ignore=ignore, per_file_ignores=tuple(per_file),
                  model_names=tuple(models), sync_min_calls=min_calls, root=root,
                  warnings=tuple(warnings))
