"""JSON in and out, with orjson, and atomic file writes.

Invariant: a file written here is either absent or complete. Writers write to a temporary file in
the same folder and rename (or, with `replace=False`, hard-link) it into place, so an existing
file is never replaced unless the caller says so.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import orjson

_UMASK = os.umask(0)  # read once at import (single-threaded then): umask has no getter
os.umask(_UMASK)


def loads(data: bytes | str) -> Any:
    return orjson.loads(data)


def plain(value: Any) -> Any:
    """A value as plain JSON types: named tuples (how pygls hands over custom LSP params and
    answers) become dicts, tuples lists, recursively."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def dumps(obj: Any, *, indent: bool = False) -> bytes:
    option = 0
    if indent:
        option |= orjson.OPT_INDENT_2
    return orjson.dumps(obj, option=option | orjson.OPT_NON_STR_KEYS)


def read_json(path: Path) -> Any:
    return orjson.loads(Path(path).read_bytes())


def _write_via_temp(path: Path, data: bytes, *, replace: bool) -> None:
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp's 0600 would surprise users sharing a run folder
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            # link() fails if the target exists: no earlier result is ever replaced.
            os.link(tmp, path)
            os.unlink(tmp)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_json(path: Path, obj: Any, *, replace: bool = True) -> None:
    """Write `obj` as indented JSON atomically. With replace=False an existing file is an error."""
    _write_via_temp(Path(path), dumps(obj, indent=True) + b"\n", replace=replace)


def write_bytes(path: Path, data: bytes, *, replace: bool = True) -> None:
    _write_via_temp(Path(path), data, replace=replace)
