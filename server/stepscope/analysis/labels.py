"""Names that point at source: Stepscope's region labels and with_stack Python frames.

- `ss:<file-id>:<line>` labels a statement; `ss:<file-id>:<line>:next` the loop header's batch
  fetch (attributed to the header line). Nothing else is ever encoded in a label.
- A `python_function` event is named `<path>(<def line>): <function>`; its line is the function's
  def line, so figures from frames have "function" precision.
- The file table (`files.json` of a run folder) maps file ids to workspace-relative POSIX paths
  under an absolute root; resolved paths are absolute.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from .. import jsonio

_SS = re.compile(r"^ss:([A-Za-z0-9_]+):(\d+)(:next)?$")
_FRAME = re.compile(r"^(.+)\((\d+)\): (.+)$")

# Frames from these places are library code, never the user's line.
_LIBRARY_MARKERS = ("site-packages", "dist-packages", "/lib/python", "\\lib\\python", "<frozen", "<built-in")


@dataclass(frozen=True)
class SsLabel:
    file_id: str
    line: int
    is_next: bool


def parse_ss_label(name: str) -> SsLabel | None:
    m = _SS.match(name)
    if not m:
        return None
    return SsLabel(m.group(1), int(m.group(2)), m.group(3) is not None)


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

    def resolve(self, file_id: str) -> str | None:
        rel = self.files.get(file_id)
        if rel is None:
            return None
        return str(self.root.joinpath(*rel.split("/")))


def load_file_table(path: Path) -> FileTable:
    """Read `files.json`; a malformed table is a usage error with a one-line reason."""
    try:
        doc = jsonio.read_json(path)
    except (OSError, ValueError) as e:
        raise UsageError(f"{path}: cannot read the file table ({e})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict) or not isinstance(doc.get("root"), str):
        raise UsageError(f"{path}: not a file table (expected {{'root': str, 'files': {{id: path}}}})")
    files = {str(k): str(v) for k, v in doc["files"].items()}
    return FileTable(Path(doc["root"]), files)


def user_frame_path(frame: Frame, source_root: Path | None) -> str | None:
    """The absolute path of a frame in the user's code, or None for library / synthetic frames."""
    if frame.function == "<module>" or frame.path.startswith("<"):
        # a module frame spans the whole script: it names no line of the step
        return None
    raw = frame.path.replace("\\", "/")
    if any(marker in raw for marker in _LIBRARY_MARKERS) or "/torch/" in raw or raw.startswith("torch/"):
        return None
    p = Path(frame.path)
    if not p.is_absolute():
        # a relative frame path is relative to the program's working directory, which the trace
        # does not record: accept it only where the file really is under the source root
        if source_root is None or not (source_root / p).is_file():
            return None
        p = source_root / p
    if source_root is not None:
        try:
            p.relative_to(source_root)
        except ValueError:
            return None
    return str(p)
