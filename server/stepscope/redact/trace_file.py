"""A trace file in, a redacted copy (or only the report of what would change) out.

Two passes over the file:
1. The trace engine reads it (`read_trace`: the one-line refusals of bad input, and the fast
   reader's symbol table). Every distinct name, call stack, process and thread name and metadata
   string is decided here, knowing its role: labels get the label-only detectors, names of work
   (operators, kernels, copies, runtime calls) none, a metadata value its key's. The metadata says
   which user and host names the trace carries, the home paths in its names which user.
2. The JSON text streams through `stream.rewrite`, which decides every string of the text — the
   arguments, instant and counter events the reader does not keep included — with the same
   decisions, and replaces those that change.

Every string the first pass decided to change must be met again in the second; one that is not
stops the command before anything is written (it would mean the passes disagree about the text).
A trace that is not a regular file (a pipe, `/dev/stdin`) is read once into a temporary file,
removed afterwards, since it is read twice.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import orjson

from ..errors import NotATraceError, StepscopeError, UsageError
from ..trace import Kind, read_trace
from ..trace.model import Trace
from . import stream
from .detect import HOST, PATH, USER, WORKSPACE, Known
from .keys import key_role, keyed_value, names_everywhere
from .lookalike import fold
from .redactor import Redactor, Secret

_WORK_KINDS = (Kind.RUNTIME, Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.DEVICE_SYNC, Kind.DEVICE_OTHER)
_LABEL_KINDS = (Kind.ANNOTATION, Kind.GPU_ANNOTATION)
_OPERATOR = re.compile(r"::|^\w+Backward\d*$|^aten|^[a-z_][a-z0-9_]*$")
_GENERIC_VALUES = frozenset({"", "localhost", "127.0.0.1", "::1", "0.0.0.0", "root", "nobody", "user", "unknown",
                             "none", "null", "n/a"})


@dataclass
class Found:
    """One secret of the report: never its value, only a masked form and where it was first met."""

    kind: str
    placeholder: str
    what: str
    masked: str
    strings: int
    occurrences: int
    event: int | None
    key: str | None
    offset: int | None
    excerpt: str


@dataclass
class Result:
    trace: Path
    output: Path | None
    workspace: str | None
    found: list[Found] = field(default_factory=list)
    json_bytes: int = 0

    @property
    def unsafe(self) -> bool:
        return bool(self.found)


# ---------------------------------------------------------------- what the trace says about itself

def workspace_of(trace_path: Path) -> str | None:
    """The workspace root of a trace in a run folder (its `files.json`), else None."""
    table = Path(trace_path).parent / "files.json"
    try:
        doc = orjson.loads(table.read_bytes())
    except (OSError, ValueError):
        return None
    root = doc.get("root") if isinstance(doc, dict) else None
    if not isinstance(root, str) or not root:
        return None
    path = Path(root)
    if not path.is_absolute():  # relative to the table, as the analysis reads it
        path = (table.parent / path).resolve()
    return str(path)


def _metadata_strings(value: Any, key: str | None) -> Iterator[tuple[str | None, str]]:
    """(the key that holds it, string) for every string in the metadata: a string held by a key, or
    in an array of strings held by a key, has that key (as the text pass reads keys); any other,
    None. Keys are strings of the text too: each comes with None."""
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield None, str(k)
            yield from _metadata_strings(v, str(k))
    elif isinstance(value, list):
        for v in value:
            yield from _metadata_strings(v, key if isinstance(v, str) else None)


@dataclass
class Inventory:
    """Pass 1: the strings of a trace that the reader sees, by role, and what they tell."""

    known: Known
    labels: set[str]
    work_names: set[str]
    strings: list[str]  # every string to decide, names first
    event_names: set[str]  # strings written as the `name` of an event (or of a process, a thread)
    metadata: dict[str, set[str]]  # key (or top-level key, for keys themselves) -> the metadata strings it holds
    keyed: list[tuple[str, str, str]]  # (string, role, key) of metadata values whose key names a secret


def inventory(trace: Trace, workspace: str | None) -> Inventory:
    names = trace.names
    labels: set[str] = set()
    work: set[str] = set()
    for kind in _LABEL_KINDS:
        labels.update(map(names.__getitem__, set(map(trace.name.__getitem__, trace.rows(kind)))))
    for kind in _WORK_KINDS:
        work.update(map(names.__getitem__, set(map(trace.name.__getitem__, trace.rows(kind)))))
    for name in map(names.__getitem__, set(map(trace.name.__getitem__, trace.rows(Kind.CPU_OP)))):
        # in 1.9 traces record_function labels are operators (`cat: Operator`)
        (work if _OPERATOR.search(name) else labels).add(name)
    shapes = set(trace.shapes)
    shapes.discard(-1)
    name_strings = [n for i, n in enumerate(names) if i not in shapes]  # event names and call stacks
    event_names = set(map(names.__getitem__, set(trace.name)))
    users: set[str] = set()
    hosts: set[str] = set()
    metadata: dict[str, set[str]] = {}
    meta_strings: list[str] = []
    keyed: list[tuple[str, str, str]] = []
    for top, value in trace.metadata.items():
        meta_strings.append(str(top))
        for key, s in _metadata_strings(value, str(top)):
            metadata.setdefault(key or str(top), set()).add(s)
            meta_strings.append(s)
            role = key_role(key) if key is not None else None
            if role is None:
                continue
            keyed.append((s, role, key))
            if names_everywhere(role, key) and keyed_value(role, key, s) and s.strip().lower() not in _GENERIC_VALUES:
                (users if role == USER else hosts).add(fold(s.strip())[0])  # as the detectors read it
    # the user of a home path (`/home/<user>/`) in a frame, a call stack or the metadata
    for s in [*name_strings, *meta_strings]:
        s = fold(s)[0]
        if "home" in s or "Users" in s or "users" in s:
            for m in re.finditer(r"(?:^|[\\/])(?:home|Users|users|homes)[\\/]([^\\/\s:;()<>|\"'`]+)", s):
                user = m.group(1)
                if len(user) >= 3 and user.lower() not in _GENERIC_VALUES and not user.startswith("<"):
                    users.add(user)
    extra = [*trace.process_names.values(), *trace.thread_names.values()]
    return Inventory(Known(frozenset(users), frozenset(hosts), workspace), labels, work,
                     [*name_strings, *extra, *meta_strings], event_names | set(extra), metadata, keyed)


def trace_redactor(trace: Trace, workspace: str | None) -> tuple[Redactor, Inventory]:
    """The redactor of one trace, with every string the reader saw decided (in a fixed order, so
    placeholders are numbered as in the redacted copy): for an editor view of that trace too."""
    inv = inventory(trace, workspace)
    redactor = Redactor(inv.known, labels=inv.labels, work_names=inv.work_names)
    for s in inv.strings:
        redactor.redact(s)
    for s, role, key in inv.keyed:
        redactor.redact_keyed(s, role, key)
    return redactor, inv


# ---------------------------------------------------------------- the passes

class _Plan:
    """The decisions of the text pass (`stream.Decisions`): the redactor's, by raw string."""

    def __init__(self, redactor: Redactor):
        self.redactor = redactor
        self.text_of: dict[bytes, str] = {}  # each raw string replaced, decoded
        self.written: dict[bytes, str] = {}  # ... and what it became (its key's decision, where it has one)
        self._keys: dict[bytes, str] = {}

    def _text(self, raw: bytes) -> str:
        try:
            return orjson.loads(b'"' + raw + b'"')
        except orjson.JSONDecodeError:
            raise NotATraceError("invalid JSON string in the trace") from None

    def _raw(self, raw: bytes, text: str, new: str | None) -> bytes | None:
        if new is None:
            return None
        self.text_of[raw] = text
        self.written[raw] = new
        return orjson.dumps(new)[1:-1]

    def decide(self, raw: bytes) -> bytes | None:
        text = self._text(raw)
        return self._raw(raw, text, self.redactor.redact(text))

    def key_role(self, raw: bytes) -> str | None:
        if len(raw) > 64:
            return None
        key = self._text(raw)
        role = key_role(key)
        if role is not None:
            self._keys[raw] = key
        return role

    def decide_keyed(self, raw: bytes, role: str, key: bytes) -> bytes | None:
        text = self._text(raw)
        return self._raw(raw, text, self.redactor.redact_keyed(text, role, self._keys[key]))


def _mask(secret: Secret) -> str:
    v = secret.value
    if secret.kind in (PATH, WORKSPACE):
        m = re.match(r"^(.*?(?:home|Users|users|homes|root)[\\/]?)", v)
        head = m.group(1) if m and len(m.group(1)) < len(v) else v[:2]
        return f"{head}… ({len(v)} chars)"
    if secret.kind == "email":
        local, _, domain = v.partition("@")
        return f"{local[:1]}…@{domain[:1]}… ({len(v)} chars)"
    m = re.match(r"^(?:-----BEGIN [A-Z ]+-----|[A-Za-z]{2,6}[_-](?:[a-z]+[_-])?|eyJ|AKIA|ASIA|AIza)", v)
    head = m.group(0) if m and secret.kind == "token" else v[:1]
    return f"{head}… ({len(v)} chars)"


def _excerpt(new: str, placeholder: str, width: int = 100) -> str:
    at = new.find(placeholder) if placeholder else 0
    if len(new) <= width:
        return new
    start = max(0, min(at - width // 3, len(new) - width))
    return ("…" if start else "") + new[start:start + width] + ("…" if start + width < len(new) else "")


@contextmanager
def _regular_file(path: Path) -> Iterator[Path]:
    """The trace as a regular file: itself, or, for a pipe, a FIFO or `/dev/stdin` (its bytes come
    once, and redaction reads them twice), a temporary copy that is removed afterwards."""
    try:
        regular = stat.S_ISREG(os.stat(path).st_mode)
    except PermissionError:
        raise UsageError(f"cannot open {path}: permission denied") from None
    except OSError as e:
        raise UsageError(f"cannot open {path}: {e.strerror or e}") from None
    if regular:
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="stepscope-redact-") as folder:
        copy = Path(folder) / "trace.json"
        try:
            with open(path, "rb") as src, open(copy, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        except OSError as e:
            raise UsageError(f"cannot read {path}: {e.strerror or e}") from None
        yield copy


def _run(path: Path, out: Path | None, workspace: str | None) -> Result:
    path = Path(path)
    with _regular_file(path) as readable:
        # a pipe keeps the name it was given (resolved, /dev/stdin is /proc/<pid>/fd/pipe:[...])
        regular = readable == path
        return _run_file(path.resolve() if regular else path.absolute(), readable, regular, out, workspace)


def _run_file(path: Path, readable: Path, regular: bool, out: Path | None, workspace: str | None) -> Result:
    trace = read_trace(readable)
    if workspace is None and regular:
        workspace = workspace_of(path)
    if workspace is not None:
        workspace = workspace.rstrip("/\\") or workspace
    redactor, inv = trace_redactor(trace, workspace)
    del trace  # the columns are not needed past this point
    expected = {s for s in inv.strings if redactor.redact(s) is not None}
    expected |= {s for s, role, key in inv.keyed if redactor.redact_keyed(s, role, key) is not None}
    plan = _Plan(redactor)
    output = None
    if out is not None:
        output = stream.Output(out, compress=out.name.endswith(".gz"))
    try:
        scan = stream.rewrite(stream.json_chunks(readable), plan, output.write if output is not None else None)
        missing = expected - {plan.text_of[raw] for raw in scan.counts}
        if missing:
            raise StepscopeError(
                f"{path}: {len(missing)} string(s) found to redact when the trace was read were not met again in "
                f"its JSON text; nothing was written")
        if output is not None:
            output.commit()
            output = None
    finally:
        if output is not None:
            output.discard()
    return Result(path, out.resolve() if out is not None else None, workspace,
                  _findings(redactor, plan, scan, inv), scan.json_bytes)


def _findings(redactor: Redactor, plan: _Plan, scan: stream.Scan, inv: Inventory) -> list[Found]:
    raws_of: dict[str, list[bytes]] = {}
    for raw in scan.counts:
        raws_of.setdefault(plan.text_of[raw], []).append(raw)
    found = []
    for secret in redactor.secrets.values():
        raws = [raw for s in secret.strings for raw in raws_of.get(s, ())]
        if not raws:
            continue  # decided in pass 1 for a string the file does not hold as such (never the case)
        first_raw = min(raws, key=lambda r: scan.first[r].offset)
        occ = scan.first[first_raw]
        event = occ.event
        text = plan.text_of[first_raw]
        if occ.key is not None and text in inv.metadata.get(occ.key, ()) and text not in inv.event_names:
            event = None  # a metadata value (written before or after the events)
        new = plan.written[first_raw]  # as written: a value under its key is replaced whole
        found.append(Found(secret.kind, secret.placeholder, secret.what, _mask(secret), len(secret.strings),
                           sum(scan.counts[r] for r in raws), event, occ.key, occ.offset,
                           _excerpt(new, secret.placeholder)))
    found.sort(key=lambda f: (f.offset if f.offset is not None else -1, f.kind))
    return found


def check_trace(path: Path, *, workspace: str | None = None) -> Result:
    """What `redact_trace` would change, without writing anything."""
    return _run(Path(path), None, workspace)


def redact_trace(path: Path, out: Path, *, workspace: str | None = None) -> Result:
    """Write the redacted copy of `path` to `out` (a new file: exit 5 if it exists; `.gz`:
    gzip). Raises StepscopeError with a one-line reason; nothing is left behind on failure."""
    out = Path(out)
    try:
        if out.exists() or out.is_symlink():
            raise StepscopeError(f"refusing to overwrite {out}", 5)
        if not out.parent.is_dir():
            raise UsageError(f"no such folder for the output: {out.parent}")
    except PermissionError:
        raise UsageError(f"cannot write in {out.parent}: permission denied") from None
    return _run(Path(path), out, workspace)


def beside(path: Path, n: int = 1) -> Path:
    """The name of a trace's redacted copy beside it: `trace.redacted.json(.gz)`, and with `n` > 1
    `trace.redacted-N.json(.gz)` (a copy made earlier is kept). None is a name of the run contract,
    so a run folder's analysis never reads a copy as one of its traces."""
    path = Path(path)
    name = path.name
    tag = ".redacted" if n == 1 else f".redacted-{n}"
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix):
            return path.with_name(name[: -len(suffix)] + tag + suffix)
    return path.with_name(name + tag + ".json")


def redact_beside(path: Path, *, workspace: str | None = None) -> Result:
    """The redacted copy beside the trace (one call for `profile --redact` and "Share Trace…"):
    the first free name of `beside`, so an earlier copy is never overwritten."""
    n = 1
    while beside(path, n).exists() or beside(path, n).is_symlink():
        n += 1
    return redact_trace(Path(path), beside(path, n), workspace=workspace)


def counts(result: Result) -> dict[str, int]:
    """How many distinct secrets of each kind the result replaced (or would replace)."""
    out: dict[str, int] = {}
    for f in result.found:
        out[f.kind] = out.get(f.kind, 0) + 1
    return out


__all__ = ["Found", "Result", "beside", "check_trace", "counts", "inventory", "redact_beside", "redact_trace", "workspace_of"]
