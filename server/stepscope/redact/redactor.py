"""Deciding, once per distinct string, what it becomes; numbering the placeholders.

Invariants:
- The same secret always gets the same placeholder (`<host:2>` is one host wherever it appears),
  and two different secrets of a kind never share one. Numbers are given per kind, in the order
  secrets are first met, so a result is the same from run to run.
- A string's fate depends only on the string, its role (label or name of work) and what the trace
  told about itself (`Known`): `redact(s)` is a function, cached.
- Names of work — operators, kernels, copies, runtime calls — are never changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .detect import WORKSPACE, Hit, Known, find_hits, redact_text


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

    def placeholder(self, kind: str, value: str) -> str:
        secret = self.secrets.get((kind, value))
        if secret is None:
            n = self._numbers[kind] = self._numbers.get(kind, 0) + 1
            secret = self.secrets[(kind, value)] = Secret(kind, value, f"<{kind}:{n}>", "")
        return secret.placeholder

    def hits(self, text: str) -> list[Hit]:
        """The spans of `text` to redact (see detect.find_hits), by the string's role."""
        hits = self._hits.get(text)
        if hits is None:
            is_label = text in self.labels
            if text in self.work_names and not is_label:
                hits = []
            else:
                hits = find_hits(text, label=is_label, known=self.known)
            self._hits[text] = hits
        return hits

    def redact(self, text: str) -> str | None:
        try:
            return self._cache[text]
        except KeyError:
            pass
        hits = self.hits(text)
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
        self._cache[text] = result
        return result


def would_redact(strings: list[str], *, labels: bool = True, known: Known = Known()) -> list[str | None]:
    """For an editor view: each string as it would be shared (None: unchanged). `labels=True`
    treats every string as a label (the strictest: random-looking strings and input content are
    looked for too); the numbering is that of this list, not of a trace's redacted copy."""
    r = Redactor(known, labels=set(strings) if labels else frozenset())
    return [r.redact(s) for s in strings]
