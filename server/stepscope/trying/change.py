"""A change to try: what each file becomes, made from edits, a patch, or a new text; its diff.

    change = Change.of_edits(title, origin, "train.py", text, edits)
    change = Change.of_patch(title, origin, patch_text, read)   # read(rel) -> the file's text, or None
    change.diff()                                                # unified diff, a/ and b/ paths

Invariants:
- A change holds, for each file it touches, the text it had (`before`, with the sha256 of its bytes)
  and the text it gets (`after`): what is measured and what Apply writes are the same texts.
- Positions in edits are those of `rules.model.Edit` (1-based lines, 0-based columns in code
  points, end exclusive); edits never overlap, and an edit's inserted line breaks follow the file's
  own (CRLF stays CRLF).
- A patch applies only where its removed and context lines are in the file exactly (a hunk may sit
  a few lines away from where it says, never with fuzz); one that does not, or that renames,
  deletes or changes a binary file, is refused in one line (`ChangeError`).
- Paths are workspace-relative POSIX paths that stay inside the workspace.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Callable, Iterable, Sequence

from ..errors import UsageError
from ..rules import edits as rules_edits
from ..rules.edits import newline_of
from ..rules.model import Edit


class ChangeError(UsageError):
    """A change that cannot be made: its reason in one line."""


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def text_digest(text: str) -> str:
    """The sha256 of a text as its file holds it (UTF-8)."""
    return digest(text.encode("utf-8", "surrogateescape"))


@dataclass(frozen=True)
class FileChange:
    path: str  # workspace-relative, POSIX
    before: str | None  # None: the change creates the file
    after: str

    @property
    def before_sha256(self) -> str | None:
        return None if self.before is None else text_digest(self.before)

    def as_dict(self) -> dict:
        return {"path": self.path, "before": self.before, "after": self.after, "before_sha256": self.before_sha256}

    @classmethod
    def from_dict(cls, doc: dict) -> "FileChange":
        return cls(str(doc["path"]), doc.get("before"), str(doc["after"]))


@dataclass(frozen=True)
class Change:
    """What a try measures: `files` changed as they say, nothing else. `applicable` is False for an
    experiment that answers a question but is no change to keep (`why_not` says so)."""

    title: str
    origin: dict  # {"kind": "finding" | "fix" | "patch" | "text", ...}: where the change came from
    files: tuple[FileChange, ...]
    applicable: bool = True
    why_not: str | None = None

    def __post_init__(self) -> None:
        if not self.files:
            raise ChangeError(f"{self.title}: the change leaves every file as it is")
        for f in self.files:
            check_path(f.path)

    @classmethod
    def of_edits(cls, title: str, origin: dict, path: str, text: str, edits: Sequence[Edit], *,
                 applicable: bool = True, why_not: str | None = None) -> "Change":
        return cls(title, origin, (FileChange(path, text, apply_edits(text, edits)),), applicable, why_not)

    @classmethod
    def of_texts(cls, title: str, origin: dict, texts: Iterable[tuple[str, str | None, str]]) -> "Change":
        return cls(title, origin, tuple(FileChange(p, b, a) for p, b, a in texts if b != a))

    @classmethod
    def of_patch(cls, title: str, origin: dict, patch: str, read: Callable[[str], str | None]) -> "Change":
        files = []
        for target in parse_patch(patch):
            before = read(target.path)
            if before is None and not target.creates:
                raise ChangeError(f"the patch changes {target.path}, which is not in the workspace")
            if before is not None and target.creates:
                raise ChangeError(f"the patch creates {target.path}, which already exists")
            files.append(FileChange(target.path, before, target.apply(before or "")))
        return cls.of_texts(title, origin, [(f.path, f.before, f.after) for f in files])

    def diff(self) -> str:
        """The change as a unified diff (`git apply` and `patch -p1` take it back)."""
        out = []
        for f in self.files:
            old = (f.before or "").splitlines(keepends=True)
            new = f.after.splitlines(keepends=True)
            lines = list(difflib.unified_diff(old, new, "/dev/null" if f.before is None else f"a/{f.path}",
                                              f"b/{f.path}", n=3))
            for line in lines:
                out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
        return "".join(out)

    def stats(self) -> dict:
        """Lines added and removed, over all files."""
        added = removed = 0
        for line in self.diff().splitlines():
            if line.startswith("+") and not line.startswith("+++"):
                added += 1
            elif line.startswith("-") and not line.startswith("---"):
                removed += 1
        return {"files": len(self.files), "added": added, "removed": removed}

    def as_dict(self) -> dict:
        return {"title": self.title, "origin": self.origin, "applicable": self.applicable, "why_not": self.why_not,
                "files": [f.as_dict() for f in self.files], "diff": self.diff(), "stats": self.stats()}

    @classmethod
    def from_dict(cls, doc: dict) -> "Change":
        return cls(str(doc["title"]), dict(doc.get("origin") or {}),
                   tuple(FileChange.from_dict(f) for f in doc["files"]), bool(doc.get("applicable", True)),
                   doc.get("why_not"))


def check_path(path: str) -> None:
    p = PurePosixPath(path)
    if p.is_absolute() or not p.parts or ".." in p.parts or p.parts[0] == ".stepscope":
        raise ChangeError(f"{path}: a change may touch only files inside the workspace")


# -- edits -----------------------------------------------------------------------------------------
def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """`text` with `edits` applied (positions as in rules.model.Edit). Overlapping edits, or a
    position outside the text, raise ChangeError."""
    try:
        return rules_edits.apply_edits(text, edits)
    except rules_edits.EditError as e:
        raise ChangeError(str(e)) from None


def line_edits(before: str, after: str) -> list[Edit]:
    """Edits, whole lines each, that turn `before` into `after` (for an editor to apply: its undo
    then undoes exactly the change)."""
    old = before.splitlines(keepends=True)
    new = after.splitlines(keepends=True)
    edits = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        edits.append(Edit(i1 + 1, 0, i2 + 1, 0, "".join(new[j1:j2])))
    return edits


# -- patches ---------------------------------------------------------------------------------------
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
HUNK_SEARCH = 200  # lines a hunk may have moved from where it says it applies


@dataclass
class _Hunk:
    old_start: int
    old: list[str]  # the lines it expects (context and removed), with their line ends
    new: list[str]


@dataclass
class PatchTarget:
    path: str
    creates: bool
    hunks: list[_Hunk]

    def apply(self, text: str) -> str:
        lines = text.splitlines(keepends=True)
        nl = newline_of(text) if text else "\n"
        out: list[str] = []
        at = 0  # lines of `lines` consumed
        for hunk in self.hunks:
            old = [_as(line, nl) for line in hunk.old]
            found = _find(lines, old, max(at, hunk.old_start - 1), at)
            if found is None:
                raise ChangeError(f"the patch does not apply to {self.path}: the lines of its hunk at line "
                                  f"{hunk.old_start} are not in the file as it is")
            out += lines[at:found]
            out += [_as(line, nl) for line in hunk.new]
            at = found + len(old)
        out += lines[at:]
        return "".join(out)


def _as(line: str, nl: str) -> str:
    """A patch line with the file's line break (a line without one stays without)."""
    if line.endswith("\n"):
        return line.rstrip("\r\n") + nl
    return line


def _same(a: str, b: str) -> bool:
    return a.rstrip("\r\n") == b.rstrip("\r\n") and (a.endswith("\n") == b.endswith("\n"))


def _find(lines: list[str], old: list[str], near: int, earliest: int) -> int | None:
    """Where `old` is in `lines` at or after `earliest`, the nearest to `near` first."""
    def matches(at: int) -> bool:
        return at + len(old) <= len(lines) and all(_same(lines[at + i], old[i]) for i in range(len(old)))

    if not old:
        return min(max(near, earliest), len(lines))
    for distance in range(HUNK_SEARCH + 1):
        for at in (near - distance, near + distance) if distance else (near,):
            if at >= earliest and matches(at):
                return at
    return None


def _strip(name: str, prefixed: bool) -> str:
    name = name.split("\t")[0].strip()
    if name.startswith('"') and name.endswith('"'):
        raise ChangeError(f"the patch names a file with quoted characters ({name}); give it a plain name")
    if prefixed and name != "/dev/null":
        name = name.split("/", 1)[1] if "/" in name else name
    return name


def parse_patch(text: str) -> list[PatchTarget]:
    """The files and hunks of a unified diff (`git diff`, `diff -u`). With a/ and b/ prefixes on
    both names the first part is dropped (as `patch -p1` does), otherwise the names are taken as
    they are, relative to the workspace."""
    if "GIT binary patch" in text or re.search(r"^Binary files .* differ$", text, re.M):
        raise ChangeError("the patch changes a binary file")
    lines = text.splitlines(keepends=True)
    targets: list[PatchTarget] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(("rename from ", "rename to ", "deleted file mode", "copy from ")):
            raise ChangeError("the patch renames, copies or deletes a file: a try changes files' text only")
        if not (line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")):
            i += 1
            continue
        old_name, new_name = line[4:].rstrip("\r\n"), lines[i + 1][4:].rstrip("\r\n")
        prefixed = (old_name.startswith("a/") or old_name.startswith("/dev/null")) and new_name.startswith("b/")
        old_path, new_path = _strip(old_name, prefixed), _strip(new_name, prefixed)
        if new_path == "/dev/null":
            raise ChangeError(f"the patch deletes {old_path}: a try changes files' text only")
        if old_path != "/dev/null" and old_path != new_path:
            raise ChangeError(f"the patch renames {old_path} to {new_path}: a try changes files' text only")
        check_path(new_path)
        target = PatchTarget(new_path, old_path == "/dev/null", [])
        i += 2
        while i < len(lines) and (m := _HUNK.match(lines[i])):
            old_count = int(m.group(2)) if m.group(2) is not None else 1
            new_count = int(m.group(4)) if m.group(4) is not None else 1
            hunk = _Hunk(int(m.group(1)), [], [])
            i += 1
            seen_old = seen_new = 0
            while i < len(lines) and (seen_old < old_count or seen_new < new_count):
                body = lines[i]
                tag, rest = body[:1], body[1:]
                if body.rstrip("\r\n") == "":  # a context line whose leading space was stripped
                    tag, rest = " ", body
                if tag == " ":
                    hunk.old.append(rest)
                    hunk.new.append(rest)
                    seen_old += 1
                    seen_new += 1
                elif tag == "-":
                    hunk.old.append(rest)
                    seen_old += 1
                elif tag == "+":
                    hunk.new.append(rest)
                    seen_new += 1
                elif tag == "\\":
                    pass
                else:
                    raise ChangeError(f"the patch's hunk for {new_path} at line {hunk.old_start} ends early")
                i += 1
                # "\ No newline at end of file" applies to the line just read
                if i < len(lines) and lines[i].startswith("\\"):
                    if tag in (" ", "-"):
                        hunk.old[-1] = hunk.old[-1].rstrip("\r\n")
                    if tag in (" ", "+"):
                        hunk.new[-1] = hunk.new[-1].rstrip("\r\n")
                    i += 1
            if seen_old != old_count or seen_new != new_count:
                raise ChangeError(f"the patch's hunk for {new_path} at line {hunk.old_start} ends early")
            target.hunks.append(hunk)
        if not target.hunks:
            raise ChangeError(f"the patch names {new_path} but changes nothing in it")
        targets.append(target)
    if not targets:
        raise ChangeError("not a patch: no `--- a/FILE` / `+++ b/FILE` header with hunks (a unified diff, as "
                          "`git diff` writes it)")
    if len({t.path for t in targets}) != len(targets):
        raise ChangeError("the patch changes one file in two places: give one diff per file")
    return targets
