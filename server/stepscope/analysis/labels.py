"""Names that point at source: Stepscope's region labels and with_stack Python frames.

- `ss:<file-id>:<line>` labels a statement; `ss:<file-id>:<line>:next` the loop header's batch
  fetch (attributed to the header line). Nothing else is ever encoded in a label; the run
  contract (agent/protocol.py) writes and parses them (`parse_label`).
- A `python_function` event is named `<path>(<def line>): <function>`; its line is the function's
  def line, so figures from frames have "function" precision.
- A 1.9-era `Call stack` arg is `<path>(<line>): <function>;...`, innermost frame first, and each
  line is the line *executing* in that frame: for the innermost user frame, the statement that
  called the op. Figures from it have "call" precision: the right statement, but only the time of
  the ops it called (Python time between them is not in the trace).
- The file table (`files.json` of a run folder) maps file ids to workspace-relative POSIX paths
  under an absolute root, or to absolute paths for files outside it; resolved paths are absolute.
  Its `packages` names the files of installed packages (the module of a step named in a package)
  with their package: every other file of the table is the user's own.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError
from .. import jsonio

_FRAME = re.compile(r"^(.+)\((\d+)\): (.+)$")

# Frames from these places are library code, never the user's line.
_LIBRARY_MARKERS = ("site-packages", "dist-packages", "/lib/python", "\\lib\\python", "<frozen", "<built-in")


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    function: str


def parse_frame(name: str) -> Frame | None:
    m = _FRAME.match(name)
    if not m:
        return None
    return Frame(m.group(1), int(m.group(2)), m.group(3))


@dataclass(frozen=True)
class FileTable:
    root: Path
    files: dict[str, str]
    packages: dict[str, str] = field(default_factory=dict)  # file id -> its installed package

    def resolve(self, file_id: str) -> str | None:
        rel = self.files.get(file_id)
        if rel is None:
            return None
        if rel.startswith("/"):
            return rel
        return str(self.root.joinpath(*rel.split("/")))

    def package_files(self) -> dict[str, str]:
        """Absolute path -> package, for each file of the table that belongs to an installed package."""
        out = {}
        for file_id, package in self.packages.items():
            path = self.resolve(file_id)
            if path is not None:
                out[path] = package
        return out


def load_file_table(path: Path) -> FileTable:
    """Read `files.json`; a malformed table is a usage error with a one-line reason. A relative
    `root` is taken relative to the folder of `files.json`, so reported paths stay absolute."""
    try:
        doc = jsonio.read_json(path)
    except (OSError, ValueError) as e:
        raise UsageError(f"{path}: cannot read the file table ({e})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict) or not isinstance(doc.get("root"), str):
        raise UsageError(f"{path}: not a file table (expected {{'root': str, 'files': {{id: path}}}})")
    files = {str(k): str(v) for k, v in doc["files"].items()}
    root = Path(doc["root"])
    if not root.is_absolute():  # a run folder moved with its sources: relative to the table itself
        root = (Path(path).parent / root).resolve()
    packages = doc.get("packages")
    packages = {str(k): str(v) for k, v in packages.items() if str(k) in files} if isinstance(packages, dict) else {}
    return FileTable(root, files, packages)


_SKIP_DIRS = {".git", ".hg", ".venv", "venv", "env", "node_modules", "__pycache__", "site-packages",
              "dist-packages", ".stepscope", ".tox", ".mypy_cache", ".pytest_cache", "build", "dist"}
MAX_INDEXED_FILES = 50_000


def parse_call_stack(text: str) -> list[Frame]:
    """The frames of a `Call stack` arg, innermost first; entries that are not frames are skipped."""
    out = []
    for entry in text.split(";"):
        frame = parse_frame(entry.strip())
        if frame is not None:
            out.append(frame)
    return out


def call_stack_line(text: str, resolver: "FrameResolver") -> tuple[str, int] | None:
    """(absolute path, line) of the innermost user-code frame of a `Call stack`, or None.

    Unlike a `python_function` event, a `<module>` entry here names a real statement (the line the
    script was executing), so module frames count."""
    for frame in parse_call_stack(text):
        path = resolver.resolve(frame, module_frames=True)
        if path is not None:
            return path, frame.line
    return None


class CallLines:
    """The `("call", path, line)` key of each `Call stack` text, by its id in the trace's names.

    Each distinct text is resolved once (a trace repeats a few hundred stacks over many thousands
    of ops); None when no frame of it is user code, and for -1 (no stack recorded)."""

    def __init__(self, names: list[str], resolver: "FrameResolver"):
        self.names = names
        self.resolver = resolver
        self._keys: dict[int, tuple[str, str, int] | None] = {-1: None}

    def key(self, stack_id: int) -> tuple[str, str, int] | None:
        try:
            return self._keys[stack_id]
        except KeyError:
            where = call_stack_line(self.names[stack_id], self.resolver)
            key = self._keys[stack_id] = ("call", where[0], where[1]) if where else None
            return key


class FrameResolver:
    """Maps the path of a `python_function` frame to an absolute path in the user's code.

    torch writes frame paths shortened by the `sys.path` entry they were found under (the script's
    folder, site-packages, ...), so a user frame often reads `train.py` or `model/net.py`. Such a
    relative path is resolved, in order: under the source root; against the run's file table; by a
    unique match of its trailing parts among the source root's `.py` files. Library frames, module
    frames and paths that match no file, or several, resolve to None: no line is better than a wrong one.
    """

    def __init__(self, root: Path | None, table: FileTable | None = None):
        self.root = root
        self.table = table
        self._by_name: dict[str, list[str]] | None = None
        self._cache: dict[str, str | None] = {}

    def resolve(self, frame: Frame, *, module_frames: bool = False) -> str | None:
        if (frame.function == "<module>" and not module_frames) or frame.path.startswith("<"):
            # a module frame event spans the whole script: it names no line of the step
            return None
        cached = self._cache.get(frame.path, "")
        if cached != "":
            return cached
        result = self._resolve(frame.path)
        self._cache[frame.path] = result
        return result

    def resolve_path(self, raw_path: str) -> str | None:
        """`resolve` for a bare path (a compiler record's stack frame), cached the same way."""
        cached = self._cache.get(raw_path, "")
        if cached != "":
            return cached
        result = self._cache[raw_path] = self._resolve(raw_path)
        return result

    def _resolve(self, raw_path: str) -> str | None:
        raw = raw_path.replace("\\", "/")
        if any(marker in raw for marker in _LIBRARY_MARKERS) or "/torch/" in raw or raw.startswith("torch/"):
            return None
        p = Path(raw_path)
        if p.is_absolute():
            if self.root is None:
                return str(p)
            try:
                p.relative_to(self.root)
            except ValueError:
                return None
            return str(p)
        if self.root is None:
            return None
        if (self.root / p).is_file():
            return str(self.root / p)
        tail = raw.lstrip("./")
        if self.table is not None:
            hits = [rel for rel in self.table.files.values() if rel == tail or rel.endswith("/" + tail)]
            if len(hits) == 1:
                return str(self.table.root.joinpath(*hits[0].split("/")))
        hits = [rel for rel in self._index().get(tail.rsplit("/", 1)[-1], []) if rel == tail or rel.endswith("/" + tail)]
        if len(hits) == 1:
            return str(self.root.joinpath(*hits[0].split("/")))
        return None

    def _index(self) -> dict[str, list[str]]:
        if self._by_name is None:
            self._by_name = {}
            count = 0
            assert self.root is not None
            for folder, dirs, files in os.walk(self.root):
                dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.startswith(".")]
                rel_folder = Path(folder).relative_to(self.root).as_posix()
                for name in files:
                    if name.endswith(".py"):
                        rel = name if rel_folder == "." else f"{rel_folder}/{name}"
                        self._by_name.setdefault(name, []).append(rel)
                        count += 1
                if count > MAX_INDEXED_FILES:
                    break
        return self._by_name
