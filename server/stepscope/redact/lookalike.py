"""Unicode look-alikes folded to the ASCII the detectors read, with a map back to the original text.

A secret written with characters that look like ASCII ones — a fullwidth `＠`, a Cyrillic `е` in
`jаne@acme.com`, a zero-width space inside a token, mathematical letters — reads the same to a
person, so it must be found the same. `fold(text)` gives the text the detectors search and, for each
of its characters, the index of the character of `text` it came from.

Invariants:
- ASCII text is returned as it is (the common case costs one `isascii`).
- Each character of the folded text comes from one character of the original, in order: a span
  `[a, b)` of the folded text is the span `[index[a], index[b - 1] + 1)` of the original, so a hit
  found in the folded text replaces exactly the characters that spelled it.
- Invisible characters (zero-width spaces and joiners, soft hyphens, the byte-order mark) are dropped,
  never replaced by something visible.
- Only characters that fold to one ASCII character are changed (NFKC, or the table of letters that
  look alike across scripts); everything else stays, so prose in any language keeps its words.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

# zero-width and formatting characters a secret can be split with and still read the same
INVISIBLE = frozenset("\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200c\u200d\u200e\u200f"
                      "\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064\u206a\u206b\u206c"
                      "\u206d\u206e\u206f\u3164\ufeff\uffa0")

# Letters of other scripts drawn like Latin ones (Unicode's confusables, the common part): NFKC
# leaves them alone, a reader does not tell them apart.
_CONFUSABLE = {
    # Cyrillic
    "а": "a", "в": "B", "е": "e", "к": "k", "м": "M", "н": "H", "о": "o", "р": "p", "с": "c", "т": "T",
    "у": "y", "х": "x", "ѕ": "s", "і": "i", "ј": "j", "һ": "h", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ӏ": "l",
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T",
    "У": "Y", "Х": "X", "Ѕ": "S", "І": "I", "Ј": "J", "Һ": "H", "Ԁ": "D", "Ԛ": "Q", "Ԝ": "W", "Ӏ": "I",
    # Greek
    "α": "a", "ο": "o", "ρ": "p", "ν": "v", "ι": "i", "κ": "k", "τ": "t", "υ": "u", "χ": "x",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
    "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    # Latin letters and signs that stand in for ASCII ones
    "ı": "i", "ɡ": "g", "ɑ": "a", "ʟ": "L", "ℓ": "l", "∕": "/", "⁄": "/", "∶": ":", "‐": "-", "‑": "-",
    "‒": "-", "–": "-", "—": "-", "−": "-", "․": ".", "‧": ".", "﹒": ".", "﹫": "@",
}


@lru_cache(maxsize=4096)
def _fold_char(c: str) -> str | None:
    """The ASCII character `c` stands for, `""` for an invisible one, None when it stays."""
    if c in INVISIBLE:
        return ""
    mapped = _CONFUSABLE.get(c)
    if mapped is not None:
        return mapped
    n = unicodedata.normalize("NFKC", c)
    if len(n) == 1 and n.isascii() and n.isprintable():
        return n
    return None


def fold(text: str) -> tuple[str, list[int] | None]:
    """(the folded text, the original index of each of its characters); `(text, None)` when
    nothing folds (the index is then the identity)."""
    if text.isascii():
        return text, None
    out: list[str] = []
    index: list[int] = []
    changed = False
    for i, c in enumerate(text):
        if c.isascii():
            out.append(c)
            index.append(i)
            continue
        f = _fold_char(c)
        if f is None:
            out.append(c)
            index.append(i)
        else:
            changed = True
            if f:
                out.append(f)
                index.append(i)
    if not changed:
        return text, None
    return "".join(out), index


def span_back(index: list[int] | None, start: int, end: int, length: int) -> tuple[int, int]:
    """The span of the original text that the folded span `[start, end)` came from. A span that
    ends where the folded text ends takes the invisible characters after it too."""
    if index is None:
        return start, end
    a = index[start] if start < len(index) else length
    b = index[end - 1] + 1 if end > start else a
    if end >= len(index):
        b = length
    return a, b
