"""`stepscope check --fix` / `--diff`: the quick fixes an editor offers, applied to files.

    text, applied, remaining, note = fix_text(text, path, config)
    result = fix_files(paths, write=True)           # files fixed on disk, what remains

Which fix: for each finding, the one an editor offers first (`preferred_fix`: the code-changing
fix of `quickfix.editor_fixes`: the real fix, else the rule's own), never a suppression comment; a finding with
no such fix stays. Fixes whose edits share a line are not made in the same round (new lines put
before the same line may be): the file is checked again and the next one is worked out from the
new text (at most `MAX_ROUNDS` rounds), so every fix sees the code it changes as it is.

Invariants:
- A file that cannot be read, decoded or parsed, or whose fixed text would not parse, is never
  written; nor is a notebook (its fixes are the editor's).
- A file is written whole or not at all: to a temporary file in its folder, then renamed over it
  (keeping its permission bits, its encoding, its byte-order mark and its line breaks); a file that
  changed on disk since it was read is left alone.
- `remaining` holds the findings of the text as fixed (for `--diff`, of the text it would be).
"""

from __future__ import annotations

import ast
import codecs
import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable

from .config import Config, load_config
from .edits import EditError, apply_edits
from .engine import NotParsed, check_whole_source
from .files import FileError, check_file, decode_source, expand_paths
from .model import Diagnostic, Edit, Fix
from .quickfix import editor_fixes

MAX_ROUNDS = 20


@dataclass(frozen=True)
class Applied:
    """A finding fixed: where it was in the text before any fix, and the fix's title."""

    diagnostic: Diagnostic
    title: str


@dataclass
class FileFix:
    path: Path
    before: str
    after: str
    applied: list[Applied] = field(default_factory=list)
    remaining: list[Diagnostic] = field(default_factory=list)
    note: str | None = None  # why the file's fixes were not (all) made, one line


@dataclass
class FixResult:
    files: list[FileFix] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    files_checked: int = 0

    @property
    def remaining(self) -> list[Diagnostic]:
        return [d for f in self.files for d in f.remaining]

    @property
    def applied(self) -> list[tuple[FileFix, Applied]]:
        return [(f, a) for f in self.files for a in f.applied]

    @property
    def changed(self) -> list[FileFix]:
        return [f for f in self.files if f.after != f.before]


def preferred_fix(diag: Diagnostic, text: str) -> Fix | None:
    """The fix an editor lists first for `diag` that changes code (not "Ignore ...")."""
    for fix in editor_fixes(diag, text):
        if not fix.title.startswith("Ignore "):
            return fix
    return None


def _meets(a: Edit, b: Edit) -> bool:
    """Two edits on a common line; new lines put before the same line do not meet (both go in)."""
    inserts = all(e.line == e.end_line and e.col == e.end_col == 0 and e.new_text.endswith("\n") for e in (a, b))
    return not inserts and a.line <= b.end_line and b.line <= a.end_line


Shift = tuple[int, int, int]  # an edit of a round: its first line, its last line, lines it adds


def _shifts(edits: list[Edit]) -> list[Shift]:
    return sorted((e.line, e.end_line, e.new_text.count("\n") - (e.end_line - e.line)) for e in edits)


def _line_before(line: int, rounds: list[list[Shift]]) -> int:
    """Where `line` of the text after `rounds` of edits was before them (a line an edit wrote:
    where that edit began)."""
    for shifts in reversed(rounds):
        moved = 0
        for first, last, added in shifts:
            if line < first + moved:
                break
            if line <= last + moved + added:  # written by this edit
                line = first + moved
                break
            moved += added
        line -= moved
    return line


def _as_found(diag: Diagnostic, rounds: list[list[Shift]]) -> Diagnostic:
    if not rounds:
        return diag
    line, end_line = _line_before(diag.line, rounds), _line_before(diag.end_line, rounds)
    return replace(diag, line=line, end_line=max(line, end_line))


def fix_text(text: str, path: str, config: Config,
             found: list[Diagnostic] | None = None) -> tuple[str, list[Applied], list[Diagnostic], str | None]:
    """(fixed text, what was fixed, what remains in it, why fixing stopped early or None).
    `found`: the findings of `text` when already known. Raises NotParsed for a text that does not
    parse."""
    applied: list[Applied] = []
    rounds: list[list[Shift]] = []
    diagnostics = found if found is not None else check_whole_source(text, path, config)
    for _ in range(MAX_ROUNDS):
        chosen: list[tuple[Diagnostic, Fix]] = []
        taken: list[Edit] = []
        for diag in diagnostics:
            fix = preferred_fix(diag, text)
            if fix is None or not fix.edits:
                continue
            if any(_meets(e, t) for e in fix.edits for t in taken):
                continue  # meets a fix of this round: the next round works it out again
            taken.extend(fix.edits)
            chosen.append((diag, fix))
        if not chosen:
            return text, applied, diagnostics, None
        try:
            new = apply_edits(text, [e for _, fix in chosen for e in fix.edits])
            ast.parse(new)
        except (EditError, SyntaxError, ValueError):
            return text, applied, diagnostics, "a fix would not leave code that parses; not applied"
        text = new
        applied.extend(Applied(_as_found(d, rounds), fix.title) for d, fix in chosen)
        rounds.append(_shifts([e for _, fix in chosen for e in fix.edits]))
        diagnostics = check_whole_source(text, path, config)
    return text, applied, diagnostics, f"stopped after {MAX_ROUNDS} rounds of fixes"


def _encoding(data: bytes) -> tuple[str, bool]:
    """(encoding, has a UTF-8 byte-order mark) of Python source bytes."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    bom = data.startswith(codecs.BOM_UTF8)
    return ("utf-8" if encoding == "utf-8-sig" else encoding), bom


def write_atomically(path: Path, data: bytes, expected: bytes) -> str | None:
    """Replace `path`'s bytes with `data` in one rename; None, or why it was left alone. A link is
    followed: the file it points at is replaced, the link stays."""
    path = path.resolve()
    try:
        if path.read_bytes() != expected:
            return "changed on disk while it was being fixed; left as it is"
        mode = stat.S_IMODE(path.stat().st_mode)
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        return f"cannot write ({e.strerror or type(e).__name__})"
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except OSError as e:
        try:
            os.unlink(temp)
        except OSError:
            pass
        return f"cannot write ({e.strerror or type(e).__name__})"
    return None


def fix_file(path: Path, config: Config, write: bool) -> tuple[FileFix | None, list[FileError]]:
    """Fix one file (on disk when `write`): its FileFix, and what of it could not be checked (None
    and the reasons where none of it could; a notebook's cells that do not parse, beside the others)."""
    diagnostics, errors = check_file(path, config)
    if errors and not all(e.in_part for e in errors):
        return None, errors
    shown = str(path.resolve())
    if path.suffix == ".ipynb":
        note = None
        if diagnostics:
            note = "notebooks are not fixed here; apply their quick fixes in the editor"
        return FileFix(path, "", "", remaining=diagnostics, note=note), errors
    data = path.read_bytes()
    text = decode_source(data)
    try:
        after, applied, remaining, note = fix_text(text, shown, config, diagnostics)
    except NotParsed as e:  # cannot happen for a text check_file took, kept for safety
        return None, [FileError(shown, str(e), e.line)]
    fixed = FileFix(path, text, after, applied, remaining, note)
    if write and after != text:
        encoding, bom = _encoding(data)
        try:
            new = (codecs.BOM_UTF8 if bom else b"") + after.encode(encoding)
        except (UnicodeEncodeError, LookupError):
            return FileFix(path, text, text, [], diagnostics, f"the fixed text cannot be written as {encoding}"), []
        why = write_atomically(path, new, data)
        if why is not None:
            return FileFix(path, text, text, [], diagnostics, why), []
    return fixed, []


def with_editor_fixes(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """`diagnostics` with the fixes the editor offers (`quickfix.editor_fixes`, from each file's
    text as it is on disk), for JSON and SARIF. A notebook's findings,
    and those of a file that cannot be read again, keep the rule's own."""
    texts: dict[str, str | None] = {}
    out = []
    for diag in diagnostics:
        if diag.cell is None and diag.path not in texts:
            try:
                texts[diag.path] = decode_source(Path(diag.path).read_bytes())
            except (OSError, ValueError):
                texts[diag.path] = None
        text = texts.get(diag.path) if diag.cell is None else None
        out.append(replace(diag, fixes=tuple(editor_fixes(diag, text))) if text is not None else diag)
    return out


def fix_files(paths: Iterable[str | Path], cli_select: tuple[str, ...] | None = None,
              cli_ignore: tuple[str, ...] = (), write: bool = True) -> FixResult:
    """`check_files` with the fixes applied (written when `write`). Raises `PathNotFound`."""
    result = FixResult()
    configs: dict[Path, Config] = {}
    for path in expand_paths(list(paths)):
        folder = path.resolve().parent
        if folder not in configs:
            configs[folder] = load_config(folder)
            result.warnings.extend(w for w in configs[folder].warnings if w not in result.warnings)
        config = configs[folder].with_cli(cli_select, cli_ignore)
        fixed, errors = fix_file(path, config, write)
        result.errors.extend(errors)
        if fixed is None:
            continue
        result.files_checked += 1
        assert fixed is not None
        result.files.append(fixed)
    return result
