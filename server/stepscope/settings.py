"""Everything `[tool.stepscope]` sets for one file, with every problem found in it, in one call.

For the language server, which uses both halves of the table: the static rules' configuration
(`[tool.stepscope]`) and the findings' thresholds (`[tool.stepscope.findings]`). The CLI shows the
same warnings where it uses each half: `stepscope check` on stderr, `analyze` / `profile` in the
report's notes. Which pyproject.toml applies is `stepscope.config`'s rule, the same everywhere.

Invariant: `settings_for` never raises for a bad file or value; each problem is one line naming the
file, said once (the file's own problems first), and what cannot be used keeps its default.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .analysis.findings.thresholds import Thresholds, load_thresholds
from .config import find_pyproject
from .rules.config import Config, load_config


@dataclass(frozen=True)
class Settings:
    pyproject: Path | None  # the pyproject.toml that applies; None when none does
    rules: Config
    thresholds: Thresholds
    warnings: tuple[str, ...]  # one line each, for the editor to show


def settings_for(path: str | Path, workspace: str | Path | None = None) -> Settings:
    """The settings that apply to `path` (a file or folder) in `workspace` (its root, when known:
    the search for a pyproject.toml does not go above it)."""
    within = Path(workspace) if workspace is not None else None
    rules = load_config(Path(path), within)
    thresholds, problems = load_thresholds(Path(path), within)
    warnings = tuple(dict.fromkeys((*rules.warnings, *problems)))  # the file's own problems are in both
    return Settings(find_pyproject(Path(path), within), rules, thresholds, warnings)
