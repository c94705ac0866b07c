"""Deciding, once per distinct string, what it becomes; numbering the placeholders.

Invariants:
- The same secret always gets the same placeholder (`<host:2>` is one host wherever it appears),
  and two different secrets of a kind never share one. Numbers are given per kind, in the order
  secrets are first met, so a result is the same from run to run.
- A string's fate depends only on the string, its role (a name of work, the profiler's own log
  line, or any other string) and what the trace told about itself (`Known`): `redact(s)` is a
  function, cached.
- Names of work — operators, kernels, copies, runtime calls — are never changed.
- A value held by a key that names a secret (`{"HF_TOKEN": ...}`, `{"master_addr": ...}`) is
  replaced whole (`redact_keyed`), whatever it looks like; the same text under another key is
  decided as any string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .detect import WORKSPACE, Hit, Known, find_hits, merge_hits, redact_text
from .keys import keyed_value

# a line of the profiler's own log, as Kineto writes it into the metadata (`"INFO": [...]`)
_PROFILER_LOG = re.compile(r"^(?:[A-Z]+:)?\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ [\w.]+\.(?:cpp|cc|h):\d+\] ")


@dataclass
class Secret:
    """One secret found: its placeholder and how often it was met."""

    kind: str
    value: str
    placeholder: str
    what: str
    strings: set[str] = field(default_factory=set)  # the original strings that hold it


class Redactor:
    """Redacts strings of one trace (or of one editor view): `redact(s)` returns the string to
    write, or None when `s` stays as it is."""

    def __init__(self, known: Known = Known(), *, labels: frozenset[str] | set[str] = frozenset(),
                 work_names: frozenset[str] | set[str] = frozenset()):
        self.known = known
        self.labels = labels
        self.work_names = work_names
        self.secrets: dict[tuple[str, str], Secret] = {}
        self._numbers: dict[str, int] = {}
        self._cache: dict[str, str | None] = {}
        self._hits: dict[str, list[Hit]] = {}
        self._keyed: dict[tuple[str, str, str], str | None] = {}

    def placeholder(self, kind: str, value: str) -> str:
        secret = self.secrets.get((kind, value))
        if secret is None:
            n = self._numbers[kind] = self._numbers.get(kind, 0) + 1
            secret = self.secrets[(kind, value)] = Secret(kind, value, f"<{kind}:{n}>", "")
        return secret.placeholder

    def hits(self, text: str) -> list[Hit]:
        """The spans of `text` to redact (see detect.find_hits), by the string's role: none in a
        name of work; in the profiler's own log lines (Kineto's `INFO: ... .cpp:294] ...`
        metadata) only what has a shape of its own; in every other string — labels, process and
        thread names, frames, arguments, metadata — every detector, random-looking strings and
        prose included."""
        hits = self._hits.get(text)
        if hits is None:
            is_label = text in self.labels
            if text in self.work_names and not is_label:
                hits = []
            else:
                hits = find_hits(text, strict=not _PROFILER_LOG.match(text), label=is_label, known=self.known)
            self._hits[text] = hits
        return hits

    def keyed_hits(self, text: str, role: str, key: str) -> list[Hit]:
        """The spans of `text` held by a key of `role` (see keys.key_role): the whole value when
        it is a secret of that kind, merged with what `hits` finds in it."""
        hits = self.hits(text)
        if text in self.work_names and text not in self.labels or not keyed_value(role, key, text):
            return hits
        start = len(text) - len(text.lstrip())
        end = len(text.rstrip())
        whole = Hit(start, end, role, text[start:end], f"value of `{key}`")
        return merge_hits([*hits, whole], text)

    def redact_keyed(self, text: str, role: str, key: str) -> str | None:
        """`redact` for a value whose key names a kind of secret."""
        cached = self._keyed.get((text, role, key), self)
        if cached is not self:
            return cached  # type: ignore[return-value]
        result = self._apply(text, self.keyed_hits(text, role, key))
        self._keyed[(text, role, key)] = result
        return result

    def redact(self, text: str) -> str | None:
        try:
            return self._cache[text]
        except KeyError:
            pass
        result = self._apply(text, self.hits(text))
        self._cache[text] = result
        return result

    def _apply(self, text: str, hits: list[Hit]) -> str | None:
        result = None
        if hits:
            result = redact_text(text, hits, self.placeholder)
            for h in hits:
                key = (h.kind, h.value)
                if h.kind == WORKSPACE and key not in self.secrets:
                    self.secrets[key] = Secret(WORKSPACE, h.value, h.replacement or "", "")
                secret = self.secrets[key]
                secret.what = secret.what or h.what
                secret.strings.add(text)
            if result == text:
                result = None
        return result


def would_redact(strings: list[str], *, labels: bool = True, known: Known = Known()) -> list[str | None]:
    """For an editor view: each string as it would be shared (None: unchanged). `labels=True`
    treats every string as a label (the strictest: random-looking strings and input content are
    looked for too); the numbering is that of this list, not of a trace's redacted copy."""
    r = Redactor(known, labels=set(strings) if labels else frozenset())
    return [r.redact(s) for s in strings]
