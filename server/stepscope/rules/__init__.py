"""Static rules SS101…SS502: what they report, configuration, and rendering.

Public API (used by the language server and `stepscope check`):
- `check_source(text, path, config=None) -> list[Diagnostic]` — one file's text; never raises.
- `check_paths(paths, config=None) -> list[Diagnostic]` — files and folders on disk.
- `check_files(paths, config=None) -> CheckResult` — the same, with the files that could not be
  checked (unreadable, undecodable, or not parsing: a file is never counted as checked when only
  part of it was; a notebook has one error per cell that does not parse) and the number checked.
- `load_config(start) -> Config` — `[tool.stepscope]` of the nearest pyproject.toml.
- `incremental.DocumentChecker(path, config).check(text)` — `check_source` for an open document,
  answered from the def/class an edit touched (what the language server runs on every change).
- `Diagnostic`, `Fix`, `Edit`, `RULES` (the catalogue: code -> RuleInfo).

Standard library only (plus `stepscope.source`): `check` runs where neither torch nor the LSP
stack is installed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from .config import Config, load_config
from .engine import check_source
from .files import FileError, PathNotFound, check_file, expand_paths
from .model import RULES, Diagnostic, Edit, Fix, RuleInfo

__all__ = [
    "CheckResult",
    "Config",
    "Diagnostic",
    "Edit",
    "FileError",
    "Fix",
    "PathNotFound",
    "RULES",
    "RuleInfo",
    "check_files",
    "check_paths",
    "check_source",
    "load_config",
]


@dataclass
class CheckResult:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    files_checked: int = 0
    warnings: list[str] = field(default_factory=list)  # configuration problems, one line each


def check_files(paths: Iterable[str | Path], config: Config | None = None,
                cli_select: tuple[str, ...] | None = None,
                cli_ignore: tuple[str, ...] = ()) -> CheckResult:
    """Check files and folders. Without `config`, each file uses its nearest pyproject.toml.

    Raises `PathNotFound` when a given path does not exist (nothing is checked then).
    """
    files = expand_paths(list(paths))
    result = CheckResult()
    configs: dict[Path, Config] = {}
    for path in files:
        if config is not None:
            cfg = config
        else:
            folder = path.resolve().parent
            if folder not in configs:
                configs[folder] = load_config(folder)
                for w in configs[folder].warnings:
                    if w not in result.warnings:
                        result.warnings.append(w)
            cfg = configs[folder]
        cfg = cfg.with_cli(cli_select, cli_ignore)
        diagnostics, errors = check_file(path, cfg)
        result.diagnostics.extend(diagnostics)
        result.errors.extend(errors)
        if not errors:
            result.files_checked += 1
    return result


def check_paths(paths: Iterable[str | Path], config: Config | None = None) -> list[Diagnostic]:
    """The diagnostics for files and folders (files that cannot be checked are skipped: use
    `check_files` to know which)."""
    return check_files(paths, config).diagnostics
